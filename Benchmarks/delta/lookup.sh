#!/usr/bin/env bash
# Issue 29's "cost" row, its lookup half: how long an indexed asset's plan takes to look its
# chunks up in the store's chunk table when the table holds ROWS chunks (100,000 by default).
#
# A library receives issue A's indexed file (SIZE_MB, served by nginx on loopback); ROWS chunk rows
# more (random SHA-256s, as many delivered indexed files would leave) are then added to its
# database beside the real ones. Then, one `paperboy sync --verbose` each, RUNS issues receive the
# same file under another name (every chunk found in the table) and RUNS issues a new file of the
# same size (no chunk found). The figure is the library's own log line for each plan ("N chunks
# looked up in the chunk table in T ms: F found in D delivered files"): the batched SQL lookup
# alone, not the copies.
#
# Run by hand:  Benchmarks/delta/lookup.sh
# Knobs (environment): ROWS=100000 SIZE_MB=50 RUNS=3 PAPERBOY=path (default: Benchmarks/build.sh)
#   WORK=/var/tmp/... (removed at the end unless KEEP=1)
# Needs nginx, python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ROWS=${ROWS:-100000}
SIZE_MB=${SIZE_MB:-50}
RUNS=${RUNS:-3}
WORK=${WORK:-$(mktemp -d /var/tmp/paperboy-lookup-bench.XXXXXX)}
# shellcheck source=../nginx.sh
source "$ROOT/Benchmarks/nginx.sh"
nginx_binary > /dev/null
PAPERBOY=$("$ROOT/Benchmarks/build.sh")
serve_work "$WORK"
[[ ${KEEP:-0} == 1 ]] || trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
BASE="http://127.0.0.1:$PORT"

# Test data, made here: the shared file (twice: two URLs) and RUNS new files, each with its index.
python3 - "$WORK/www" "$SIZE_MB" "$RUNS" <<'EOF'
import random, sys
folder, size, runs = sys.argv[1], int(sys.argv[2]) * 1_000_000, int(sys.argv[3])
shared = random.Random(40).randbytes(size)
for name in ("a.bin", "b.bin"):
    open(f"{folder}/{name}", "wb").write(shared)
for run in range(runs):
    open(f"{folder}/new{run}.bin", "wb").write(random.Random(41 + run).randbytes(size))
EOF
for file in "$WORK"/www/*.bin; do "$PAPERBOY" index --quiet "$file"; done

issue() {  # $1 = issue name, $2 = file under www: a [[issues]] table with that one indexed asset
    printf '\n[[issues]]\nname = "%s"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s/%s"\npath = "%s copy.bin"\nindexed = true\n' \
        "$1" "$BASE" "$2" "$1"
}
CONFIG=$WORK/paperboy.toml
printf '[library]\npath = "%s/out/lib"\n' "$WORK" > "$CONFIG"
issue A a.bin >> "$CONFIG"
(cd "$WORK/out" && "$PAPERBOY" sync -q --config "$CONFIG")

# ROWS more chunks, of the delivered asset, at offsets no index reaches (2^40 on).
python3 - "$WORK/out/lib/library.sqlite" "$ROWS" <<'EOF'
import os, sqlite3, sys
database, rows = sqlite3.connect(sys.argv[1]), int(sys.argv[2])
(asset,) = database.execute("SELECT assetID FROM chunk LIMIT 1").fetchone()
database.executemany("INSERT INTO chunk (sha256, assetID, offset, length) VALUES (?, ?, ?, 32768)",
                     ((os.urandom(32), asset, (1 << 40) + row) for row in range(rows)))
database.commit()
print(f"chunk table: {database.execute('SELECT count(*) FROM chunk').fetchone()[0]} rows", file=sys.stderr)
EOF

for ((run = 0; run < RUNS; run++)); do
    for kind in shared new; do
        file=b.bin name=B$run
        [[ $kind == new ]] && file=new$run.bin name=N$run
        issue "$name" "$file" >> "$CONFIG"
        (cd "$WORK/out" && "$PAPERBOY" sync --verbose --config "$CONFIG" 2>&1) | grep -o "[0-9]* chunks looked up in the chunk table in .*" |
            sed "s/^/$kind: /"
    done
done
echo "file system: $(df -T "$WORK" | awk 'NR==2 {print $2}'), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
