#!/usr/bin/env bash
# Runs SQE's whole test suite: formatting, lints, the dependency check, unit tests and the
# integration suite (which also starts the real `sqe` binary as separate processes).
#
#   scripts/test.sh            everything
#   scripts/test.sh <filter>   only tests whose name contains <filter> (checks still run)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "one version of arrow, datafusion, parquet, tonic and prost"
dups=$(cargo tree --workspace --locked -d -e normal,build --depth 0 --prefix none \
  | grep -E '^(arrow|arrow-[a-z-]+|datafusion|datafusion-[a-z-]+|parquet|tonic|tonic-[a-z-]+|prost|prost-[a-z-]+) v' \
  | sort -u || true)
if [[ -n "$dups" ]]; then
  echo "duplicate versions of core dependencies:"; echo "$dups"; exit 1
fi

step "Python clients (.venv, pinned in tests/python/requirements.txt)"
requirements=tests/python/requirements.txt
stamp=.venv/.requirements.sha256
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [[ ! -x .venv/bin/python || "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r "$requirements"
  echo "$wanted" > "$stamp"
fi

step "Chromium and ChromeDriver for the web UI's browser test (Debian's packages)"
if [[ ! -x /usr/bin/chromium || ! -x /usr/bin/chromedriver ]]; then
  sudo=$([[ $(id -u) -eq 0 ]] || echo sudo)
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
fi

step "the REST catalog + S3 stack (scripts/stack.sh; installed once, cached)"
# A stack of the suite's own, on ports of its own, stopped when the suite ends.
export SQE_STACK_DIR=${SQE_TEST_STACK_DIR:-$(mktemp -d /tmp/sqe-test-stack.XXXXXX)}
export SQE_STACK_S3_PORT=${SQE_TEST_STACK_S3_PORT:-9310}
export SQE_STACK_CATALOG_PORT=${SQE_TEST_STACK_CATALOG_PORT:-8291}
trap 'scripts/stack.sh down' EXIT
scripts/stack.sh up

step "build the sqe binary (the process tests run it)"
cargo build --locked --bin sqe

step "cargo test"
cargo test --workspace --locked -- "${1:-}"
