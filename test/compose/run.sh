#!/usr/bin/env bash
# The docker-compose tests: builds the images with `make image`, then runs
# (internal/deploytest), each under a project name of its own and always
# ending with `down -v`:
#   TestCompose        the 3-node cluster of docker-compose.yml: kills a
#                      node, partitions a node, checks convergence;
#   TestComposeRollingRestart
#                      the same cluster restarted node by node (stop, start,
#                      ready and every replica current) under 4 writers:
#                      no write lost or failed, the same log everywhere;
#   TestComposeRegion  the two regions and tie-breaker of
#                      deploy/compose/region.yml: kills region A, fails over
#                      to B, starts A again, fails back, checks every entry.
#
# All run secured, as the files ship: each test makes its own secrets
# directory with pi-ctl gen-secrets (built from this tree; PI_CTL_BIN names
# another), under build/test-secrets, removed at the end.
#
# Skips, exit 0, with a visible message when no Docker engine answers.
# PI_COMPOSE="docker compose" picks Compose v2 (default: docker-compose if
# installed, else docker compose).
#
# .ci/run passes internal/ci/testreport's binary and its record file: the
# run (or the reason it was skipped) is then a row of its summary table.
set -euo pipefail
cd "$(dirname "$0")/../.."
testreport=${1:-} record=${2:-}
name="compose (docker-compose)"

skip() {
  echo "$1: compose test skipped"
  if [ -n "$testreport" ]; then "$testreport" -suite "$name" -record "$record" -skipped "$1"; fi
  exit 0
}
if ! docker info >/dev/null 2>&1; then
  skip "docker engine not answering"
fi
if [ -z "${PI_COMPOSE:-}" ] && ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  skip "neither docker-compose nor docker compose is installed"
fi

make image
args=(-count=1 -v -timeout 25m -run '^(TestCompose|TestComposeRollingRestart|TestComposeRegion)$' ./internal/deploytest)
if [ -n "$testreport" ]; then
  PI_COMPOSE_TEST=1 go test -json "${args[@]}" 2>&1 | "$testreport" -v -suite "$name" -record "$record"
else
  PI_COMPOSE_TEST=1 go test "${args[@]}"
fi
