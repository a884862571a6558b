#!/usr/bin/env bash
# A real PostgreSQL server for the tests: a throwaway cluster (initdb + pg_ctl) on 127.0.0.1 at a free
# port, everything under one folder (SVC_PG_DIR, default ${TMPDIR:-/tmp}/svc-pg). Tuned for tests, not
# for keeping data: fsync, synchronous_commit and full_page_writes are off, unless SVC_PG_DURABLE=1
# (the benchmarks' own clusters) turns them on as on a production server. It writes the connection
# facts to $SVC_PG_DIR/pg.env (SVC_TEST_POSTGRES_URL, read by test/helpers/postgres.ts).
#
#   tools/pg/pg.sh start    start it (reuse it when it already runs); prints the state file
#   tools/pg/pg.sh stop     stop it (pg_ctl stop -m fast), remove the folder
#   tools/pg/pg.sh status   exit 0 when it answers, 1 otherwise
#
# Needs the Debian package postgresql (apt-get install -y --no-install-recommends postgresql); its
# binaries are found under /usr/lib/postgresql/<newest>/bin unless SVC_PG_BIN names the folder. As
# root the server runs as the user postgres (initdb refuses root); the folder is then that user's.
set -euo pipefail

DIR="${SVC_PG_DIR:-${TMPDIR:-/tmp}/svc-pg}"
STATE="$DIR/pg.env"
DATA="$DIR/data"
LOG="$DIR/server.log"

say() { echo "pg.sh: $*" >&2; }
die() { say "$*"; exit 1; }

bin_dir() {
  if [ -n "${SVC_PG_BIN:-}" ]; then echo "$SVC_PG_BIN"; return; fi
  local newest
  newest=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$newest" ] && [ -x "$newest/initdb" ]; then echo "$newest"; return; fi
  local initdb; initdb=$(command -v initdb || true)
  [ -n "$initdb" ] || die "no PostgreSQL server binaries: install with apt-get install -y --no-install-recommends postgresql, or name their folder in SVC_PG_BIN"
  dirname "$(readlink -f "$initdb")"
}

# Runs a server binary as the cluster's owner: postgres when this script runs as root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then
    getent passwd postgres >/dev/null || die "running as root needs the user postgres (made by the Debian package postgresql)"
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# shellcheck source=../free-port.sh
. "$(dirname "${BASH_SOURCE[0]}")/../free-port.sh"

answers() {
  [ -s "$STATE" ] || return 1
  local port; port=$(sed -n 's/^SVC_TEST_POSTGRES_PORT=//p' "$STATE")
  [ -n "$port" ] && "$(bin_dir)/pg_isready" -q -h 127.0.0.1 -p "$port" -t 3
}

stop() {
  if [ -f "$DATA/postmaster.pid" ]; then as_owner "$(bin_dir)/pg_ctl" -D "$DATA" -m fast -w -t 30 stop >/dev/null 2>&1 || true; fi
  rm -rf "$DIR"
}

start() {
  local bin; bin=$(bin_dir)
  if answers; then cat "$STATE"; return; fi
  [ -e "$DIR" ] && { say "removing a stale cluster in $DIR"; stop; }
  mkdir -p "$DIR"
  chmod 700 "$DIR"
  [ "$(id -u)" = 0 ] && chown postgres: "$DIR"
  local port; port=$(free_port)
  local durable=off
  if [ "${SVC_PG_DURABLE:-}" = 1 ]; then durable=on; fi
  # C collation: text sorts by code point, as SQLite's BINARY does.
  as_owner "$bin/initdb" -D "$DATA" -U svc --auth=trust --encoding=UTF8 --no-locale >"$DIR/initdb.log" 2>&1 \
    || die "initdb failed: $(tail -3 "$DIR/initdb.log")"
  cat >>"$DATA/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$DIR'
max_connections = 300
fsync = $durable
synchronous_commit = $durable
full_page_writes = $durable
shared_buffers = 128MB
EOF
  as_owner "$bin/pg_ctl" -D "$DATA" -l "$LOG" -w -t 30 start >/dev/null || die "the server did not start: $(tail -5 "$LOG")"
  umask 077
  cat >"$STATE" <<EOF
SVC_TEST_POSTGRES_URL=postgres://svc@127.0.0.1:$port/postgres
SVC_TEST_POSTGRES_PORT=$port
EOF
  cat "$STATE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if answers; then cat "$STATE"; else say "not running (start it with npm run pg:start)"; exit 1; fi ;;
  *) die "usage: tools/pg/pg.sh start|stop|status" ;;
esac
