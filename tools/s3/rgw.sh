#!/usr/bin/env bash
# A real S3-compatible server for the tests: a single-node Ceph cluster (one monitor, one memstore OSD,
# no manager) and one RADOS Gateway (beast) on 127.0.0.1 at a free port, everything under one folder
# (SVC_RGW_DIR, default ${TMPDIR:-/tmp}/svc-rgw). It makes a test user with generated keys and one
# bucket, and writes the connection facts to $SVC_RGW_DIR/s3.env (read by test/helpers/s3.ts).
#
#   tools/s3/rgw.sh start    start it (reuse it when it already runs); prints the state file
#   tools/s3/rgw.sh stop     stop it by the pids in its pid files, remove the folder
#   tools/s3/rgw.sh status   exit 0 when it answers, 1 otherwise
#
# Needs the Debian packages radosgw ceph-mon ceph-osd (apt-get install -y --no-install-recommends
# radosgw ceph-mon ceph-osd) and curl. Processes are found by their pid files, never by name.
set -euo pipefail

DIR="${SVC_RGW_DIR:-${TMPDIR:-/tmp}/svc-rgw}"
CONF="$DIR/ceph.conf"
STATE="$DIR/s3.env"
BUCKET="${SVC_RGW_BUCKET:-svc-test}"
MEMSTORE_BYTES="${SVC_RGW_MEMSTORE_BYTES:-4294967296}"
# Daemons in stop order.
DAEMONS=(client.rgw.svc osd.0 mon.a)

say() { echo "rgw.sh: $*" >&2; }
die() { say "$*"; exit 1; }

need() {
  local missing=()
  for bin in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool curl; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
  done
  [ ${#missing[@]} -eq 0 ] || die "missing ${missing[*]}: install with apt-get install -y --no-install-recommends radosgw ceph-mon ceph-osd curl"
}

pid_of() { [ -s "$DIR/run/$1.pid" ] && cat "$DIR/run/$1.pid" || true; }
alive() { local pid; pid=$(pid_of "$1"); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

# shellcheck source=../free-port.sh
. "$(dirname "${BASH_SOURCE[0]}")/../free-port.sh"

answers() {
  [ -s "$STATE" ] || return 1
  # shellcheck disable=SC1090
  local endpoint; endpoint=$(. "$STATE"; echo "$SVC_TEST_S3_ENDPOINT")
  for d in "${DAEMONS[@]}"; do alive "$d" || return 1; done
  [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 3 "$endpoint/")" = 200 ]
}

stop() {
  for d in "${DAEMONS[@]}"; do
    local pid; pid=$(pid_of "$d")
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for d in "${DAEMONS[@]}"; do
    local pid; pid=$(pid_of "$d")
    [ -n "$pid" ] || continue
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$DIR"
}

wait_for() { # seconds, description, command...
  local secs=$1 what=$2; shift 2
  for _ in $(seq 1 $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "$what did not come up within $secs s (logs: $DIR/log/)"
}

osd_up() { ceph -c "$CONF" --connect-timeout 5 osd stat 2>/dev/null | grep -q '1 up'; }
gateway_up() { [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$RGW_PORT/")" = 200 ]; }

start() {
  need
  if answers; then cat "$STATE"; return; fi
  [ -e "$DIR" ] && { say "removing a stale gateway in $DIR"; stop; }
  mkdir -p "$DIR"/{run,log,mon,osd}
  local fsid mon_port access secret
  fsid=$(cat /proc/sys/kernel/random/uuid)
  mon_port=$(free_port)
  RGW_PORT=$(free_port)
  while [ "$RGW_PORT" = "$mon_port" ]; do RGW_PORT=$(free_port); done
  access="SVC$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' | tr a-f A-F)"
  secret=$(head -c 30 /dev/urandom | base64 | tr -d '/+=\n')
  cat >"$CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_port]
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
keyring = /dev/null
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
pid file = $DIR/run/\$name.pid
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
osd crush chooseleaf type = 0
mon data avail warn = 0
mon data avail crit = 0
mon warn on pool no redundancy = false

[mon]
mon data = $DIR/mon/\$cluster-\$id

[osd]
osd data = $DIR/osd/\$cluster-\$id
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES

[client.rgw.svc]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $DIR/rgw
rgw enable usage log = false
EOF
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$DIR/monmap" >/dev/null
  ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" >/dev/null 2>&1 || die "ceph-mon --mkfs failed (logs: $DIR/log/)"
  ceph-mon -c "$CONF" -i a
  wait_for 20 "the monitor" ceph -c "$CONF" --connect-timeout 5 mon stat
  local id; id=$(ceph -c "$CONF" osd create)
  [ "$id" = 0 ] || die "expected osd id 0, got $id"
  ceph -c "$CONF" osd crush add osd.0 1 root=default >/dev/null 2>&1
  mkdir -p "$DIR/osd/ceph-0"
  ceph-osd -c "$CONF" -i 0 --mkfs >/dev/null 2>&1 || die "ceph-osd --mkfs failed (logs: $DIR/log/)"
  ceph-osd -c "$CONF" -i 0 2>>"$DIR/log/start.err"
  wait_for 60 "the OSD" osd_up
  mkdir -p "$DIR/rgw"
  radosgw -c "$CONF" -n client.rgw.svc 2>>"$DIR/log/start.err"
  wait_for 90 "the gateway" gateway_up
  radosgw-admin -c "$CONF" user create --uid svc-test --display-name "svc tests" \
    --access-key "$access" --secret-key "$secret" >/dev/null 2>&1 || die "radosgw-admin user create failed"
  local code
  # RGW checks x-amz-content-sha256, which curl does not send by itself (SHA-256 of the empty body).
  code=$(curl -s -o "$DIR/log/bucket.out" -w '%{http_code}' --max-time 30 -X PUT \
    -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' --aws-sigv4 "aws:amz:us-east-1:s3" --user "$access:$secret" "http://127.0.0.1:$RGW_PORT/$BUCKET")
  [ "$code" = 200 ] || die "creating bucket $BUCKET answered $code: $(cat "$DIR/log/bucket.out")"
  umask 077
  cat >"$STATE" <<EOF
SVC_TEST_S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
SVC_TEST_S3_BUCKET=$BUCKET
SVC_TEST_S3_REGION=us-east-1
SVC_TEST_S3_ACCESS_KEY_ID=$access
SVC_TEST_S3_SECRET_ACCESS_KEY=$secret
EOF
  cat "$STATE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if answers; then cat "$STATE"; else say "not running (start it with npm run s3:start)"; exit 1; fi ;;
  *) die "usage: tools/s3/rgw.sh start|stop|status" ;;
esac
