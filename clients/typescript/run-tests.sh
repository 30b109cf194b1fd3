#!/usr/bin/env bash
# Builds pi-node (unless PI_NODE_BIN names one), compiles the client with
# tsc and runs its tests with node --test against real pi-nodes.
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "${PI_NODE_BIN:-}" ]; then
  (cd ../.. && go build -o "$tmp/pi-node" ./cmd/pi-node)
  export PI_NODE_BIN="$tmp/pi-node"
fi
tsc -p .
# pi-ai's own message types must type-check against the client (test/types).
tsc -p test/types
node --test --test-concurrency=2 test/*.test.mjs
