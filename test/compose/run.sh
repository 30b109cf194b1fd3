#!/usr/bin/env bash
# The docker-compose cluster test: builds the image with `make image`, then
# runs TestCompose (internal/deploytest), which brings the 3-node cluster of
# docker-compose.yml up under a project name of its own, kills a node,
# partitions a node, checks convergence and always ends with `down -v`.
#
# Skips, exit 0, with a visible message when no Docker engine answers.
# PI_COMPOSE="docker compose" picks Compose v2 (default: docker-compose if
# installed, else docker compose).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! docker info >/dev/null 2>&1; then
  echo "docker engine not answering: compose test skipped"
  exit 0
fi
if [ -z "${PI_COMPOSE:-}" ] && ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
  echo "neither docker-compose nor docker compose is installed: compose test skipped"
  exit 0
fi

make image
PI_COMPOSE_TEST=1 go test -count=1 -v -timeout 25m -run '^TestCompose$' ./internal/deploytest
