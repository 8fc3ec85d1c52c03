#!/usr/bin/env bash
# Builds the release `paperboy` the benchmarks run and prints its path: scripts/build-release
# (static Swift runtime, code laid out by scripts/paperboy.order, lld, packed relocations), in
# SCRATCH (default /var/tmp/paperboy-bench-static), apart from .build so a benchmark never
# holds the debug build's lock. PAPERBOY=path skips the build.
set -euo pipefail
if [[ -n ${PAPERBOY:-} ]]; then echo "$PAPERBOY"; exit 0; fi
root=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${SCRATCH:-/var/tmp/paperboy-bench-static} exec "$root/scripts/build-release"
