#!/usr/bin/env bash
# The real stack SQE's integration suite runs against, as plain processes on loopback (no
# Docker here): an Iceberg REST catalog (rustberg) over an S3-compatible object store (s3s-fs).
#
#   scripts/stack.sh up       install (once, cached) and start both; bootstrap bucket + namespace
#   scripts/stack.sh down     stop exactly the processes `up` started
#   scripts/stack.sh status   what runs, where
#   scripts/stack.sh env      the SQE_* settings that point a coordinator or worker at it
#
# State (data, logs, PIDs, stack.env) lives in $SQE_STACK_DIR (default .stack/); the binaries in
# $SQE_STACK_HOME (default ~/.cache/sqe-stack), built once with cargo and reused.
set -euo pipefail
cd "$(dirname "$0")/.."

STACK_DIR=${SQE_STACK_DIR:-$PWD/.stack}
STACK_HOME=${SQE_STACK_HOME:-$HOME/.cache/sqe-stack}
S3_PORT=${SQE_STACK_S3_PORT:-9300}
CATALOG_PORT=${SQE_STACK_CATALOG_PORT:-8281}
BUCKET=warehouse
NAMESPACE=default
# Development credentials of the local store (both sides of loopback).
ACCESS_KEY=sqe-stack
SECRET_KEY=sqe-stack-secret-key
REGION=us-east-1

S3S_VERSION=0.14.1
RUSTBERG_VERSION=0.3.0

log() { printf '[stack] %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# Installs one binary into $STACK_HOME/bin unless that version is there already.
install_tool() {
  local name=$1 version=$2; shift 2
  # The stamp names the features too: a changed feature set is a new build.
  local stamp="$STACK_HOME/bin/.$name-$version$(printf -- '-%s' "$@" | tr -c 'a-zA-Z0-9.,_-' '_')"
  if [[ -x "$STACK_HOME/bin/$name" && -f "$stamp" ]]; then
    return
  fi
  local started; started=$(now)
  log "installing $name $version (once; cached in $STACK_HOME)"
  # A local catalog and store need no link-time optimisation: build fast, not small.
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=false \
    cargo install --quiet --locked --root "$STACK_HOME" \
      --target-dir "$STACK_HOME/build" "$name@$version" "$@"
  touch "$stamp"
  log "installed $name in $(since "$started") s"
}

pid_alive() { [[ -f "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

# Waits until `curl` of $1 answers with an HTTP status (any), or fails naming $2's log.
wait_http() {
  local url=$1 name=$2 pidfile=$3
  for _ in $(seq 1 300); do
    if curl -s -o /dev/null --max-time 1 "$url"; then return 0; fi
    if ! pid_alive "$pidfile"; then
      log "$name exited; its log:"; tail -n 40 "$STACK_DIR/logs/$name.log" >&2; return 1
    fi
    sleep 0.1
  done
  log "$name did not answer at $url within 30 s"; tail -n 40 "$STACK_DIR/logs/$name.log" >&2
  return 1
}

write_env() {
  cat > "$STACK_DIR/stack.env" <<EOF
SQE_CATALOG__TYPE=rest
SQE_CATALOG__CATALOG_URL=http://127.0.0.1:$CATALOG_PORT
SQE_CATALOG__WAREHOUSE=s3://$BUCKET
SQE_STORAGE__S3_ENDPOINT=http://127.0.0.1:$S3_PORT
SQE_STORAGE__S3_REGION=$REGION
SQE_STORAGE__S3_ACCESS_KEY_ID=$ACCESS_KEY
SQE_STORAGE__S3_SECRET_ACCESS_KEY=$SECRET_KEY
SQE_STORAGE__S3_PATH_STYLE=true
SQE_STACK_S3S_BIN=$STACK_HOME/bin/s3s-fs
SQE_STACK_RUSTBERG_BIN=$STACK_HOME/bin/rustberg
SQE_STACK_S3_ROOT=$STACK_DIR/s3
SQE_STACK_S3_PID=$STACK_DIR/s3s-fs.pid
SQE_STACK_CATALOG_PID=$STACK_DIR/rustberg.pid
EOF
}

up() {
  local started; started=$(now)
  mkdir -p "$STACK_DIR/logs" "$STACK_DIR/s3/$BUCKET" "$STACK_DIR/catalog"
  if pid_alive "$STACK_DIR/s3s-fs.pid" && pid_alive "$STACK_DIR/rustberg.pid"; then
    log "already up (scripts/stack.sh status)"; write_env; return
  fi
  down_quietly
  install_tool s3s-fs "$S3S_VERSION" --features binary
  install_tool rustberg "$RUSTBERG_VERSION" --no-default-features --features cli,storage-s3,aws-credentials
  local starting; starting=$(now)

  # The object store: buckets are directories under its root.
  RUST_LOG=info "$STACK_HOME/bin/s3s-fs" --host 127.0.0.1 --port "$S3_PORT" \
    --access-key "$ACCESS_KEY" --secret-key "$SECRET_KEY" "$STACK_DIR/s3" \
    > "$STACK_DIR/logs/s3s-fs.log" 2>&1 &
  echo $! > "$STACK_DIR/s3s-fs.pid"
  wait_http "http://127.0.0.1:$S3_PORT/" s3s-fs "$STACK_DIR/s3s-fs.pid"

  # The catalog: table metadata in the store, its own state in a local redb file. No trailing
  # slash on the warehouse: rustberg would put `//` into every table location.
  cat > "$STACK_DIR/rustberg.toml" <<EOF
[storage]
catalog_url = "file://$STACK_DIR/catalog"
warehouse_location = "s3://$BUCKET"

[storage.properties]
"s3.endpoint" = "http://127.0.0.1:$S3_PORT"
"s3.path-style-access" = "true"
"s3.region" = "$REGION"
"s3.access-key-id" = "env:SQE_STACK_ACCESS_KEY"
"s3.secret-access-key" = "env:SQE_STACK_SECRET_KEY"

[rate_limit]
enabled = false
EOF
  SQE_STACK_ACCESS_KEY=$ACCESS_KEY SQE_STACK_SECRET_KEY=$SECRET_KEY RUST_LOG=info \
    "$STACK_HOME/bin/rustberg" --config "$STACK_DIR/rustberg.toml" --dev --no-auth \
    --insecure-http --host 127.0.0.1 --port "$CATALOG_PORT" \
    > "$STACK_DIR/logs/rustberg.audit" 2> "$STACK_DIR/logs/rustberg.log" &
  echo $! > "$STACK_DIR/rustberg.pid"
  wait_http "http://127.0.0.1:$CATALOG_PORT/v1/config" rustberg "$STACK_DIR/rustberg.pid"

  # SQE's default schema.
  local code
  code=$(curl -s -o "$STACK_DIR/logs/bootstrap.json" -w '%{http_code}' \
    -H 'Content-Type: application/json' \
    -d "{\"namespace\": [\"$NAMESPACE\"], \"properties\": {}}" \
    "http://127.0.0.1:$CATALOG_PORT/v1/namespaces")
  case $code in
    200|409) ;;
    *) log "creating namespace $NAMESPACE answered $code: $(cat "$STACK_DIR/logs/bootstrap.json")"; exit 1 ;;
  esac
  write_env
  log "up in $(since "$started") s (start-up $(since "$starting") s): catalog http://127.0.0.1:$CATALOG_PORT, S3 http://127.0.0.1:$S3_PORT (bucket $BUCKET)"
}

stop_pid() {
  local pidfile=$1 name=$2
  if pid_alive "$pidfile"; then
    local pid; pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    log "stopped $name ($pid)"
  fi
  rm -f "$pidfile"
}

down_quietly() {
  stop_pid "$STACK_DIR/rustberg.pid" rustberg
  stop_pid "$STACK_DIR/s3s-fs.pid" s3s-fs
}

status() {
  local up=0
  for name in s3s-fs rustberg; do
    if pid_alive "$STACK_DIR/$name.pid"; then
      echo "$name: running (pid $(cat "$STACK_DIR/$name.pid"))"
    else
      echo "$name: stopped"; up=1
    fi
  done
  [[ -f "$STACK_DIR/stack.env" ]] && echo "settings: $STACK_DIR/stack.env"
  return $up
}

case ${1:-} in
  up) up ;;
  down) down_quietly ;;
  status) status ;;
  env) cat "$STACK_DIR/stack.env" ;;
  *) echo "usage: $0 up|down|status|env" >&2; exit 2 ;;
esac
