#!/usr/bin/env bash
# Builds the release `paperboy` the benchmarks run and prints its path: scripts/build-release
# (a release build with the Swift runtime linked statically), in
# SCRATCH (default /var/tmp/paperboy-bench-static), apart from .build so a benchmark never
# holds the debug build's lock. PAPERBOY=path skips the build.
set -euo pipefail
if [[ -n ${PAPERBOY:-} ]]; then echo "$PAPERBOY"; exit 0; fi
root=$(cd "$(dirname "$0")/.." && pwd)
SCRATCH=${SCRATCH:-/var/tmp/paperboy-bench-static} exec "$root/scripts/build-release"
