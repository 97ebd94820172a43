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

step "build the sqe binary (the process tests run it)"
cargo build --locked --bin sqe

step "cargo test"
cargo test --workspace --locked -- "${1:-}"
