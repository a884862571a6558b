# free_port: a TCP port on 127.0.0.1 nothing listens on (sourced by the scripts that start test servers).
free_port() {
  local port
  for _ in $(seq 1 200); do
    port=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return; fi
  done
  echo "no free port found" >&2
  exit 1
}
