#!/usr/bin/env bash
# Local-file throughput and small-asset rate: `paperboy sync` (release) side by side with `cp`.
#
#   Benchmarks/file/run.sh [--size-mib 1024] [--count 10000] [--runs 3]
#
# (a) one large file: paperboy sync vs cp, wall time, MB/s, ratio, peak RSS.
# (b) COUNT assets of 4 KiB in one sync: assets/s vs `cp -r` of the same folder, peak RSS.
# Runs are paired and alternated; the median is reported. Data is generated, never committed.
set -euo pipefail
cd "$(dirname "$0")/../.."

size_mib=1024
count=10000
runs=3
while [[ $# -gt 0 ]]; do
    case "$1" in
        --size-mib) size_mib="$2"; shift 2 ;;
        --count) count="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done

[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
bin=$(Benchmarks/build.sh)
work="${BENCH_DIR:-$(mktemp -d /var/tmp/paperboy-bench.XXXXXX)}"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# Runs a command under /usr/bin/time; prints "seconds max_rss_kib".
measure() { /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }; cat "$work/time.txt"; }

echo "== (a) one ${size_mib} MiB file =="
head -c "$((size_mib * 1024 * 1024))" /dev/urandom > "$work/src/big.bin"
sha=$(sha256sum "$work/src/big.bin" | cut -d' ' -f1)
for variant in plain verified; do
    {
        printf '[library]\npath = "lib-big"\n[[issues]]\nname = "big"\ndate = 2026-11-21\n  [[issues.assets]]\n  url = "src/big.bin"\n'
        [[ $variant == verified ]] && printf '  sha256 = "%s"\n' "$sha"
    } > "$work/big-$variant.toml"
done
cat > "$work/cp-verify.sh" <<SH
cp "$work/src/big.bin" "$work/copy.bin" && sha256sum "$work/copy.bin" >/dev/null
SH
: > "$work/pb.txt"; : > "$work/cp.txt"; : > "$work/pbv.txt"; : > "$work/cpv.txt"
for run in $(seq "$runs"); do
    rm -rf "$work/lib-big" "$work/copy.bin"; sync
    measure "$bin" sync -q --config "$work/big-plain.toml" >> "$work/pb.txt"; sync
    measure cp "$work/src/big.bin" "$work/copy.bin" >> "$work/cp.txt"; sync
    rm -rf "$work/lib-big" "$work/copy.bin"; sync
    measure "$bin" sync -q --config "$work/big-verified.toml" >> "$work/pbv.txt"; sync
    measure bash "$work/cp-verify.sh" >> "$work/cpv.txt"; sync
done
row() { # label file
    local s rss
    s=$(cut -d' ' -f1 "$2" | median); rss=$(cut -d' ' -f2 "$2" | sort -n | tail -1)
    awk -v l="$1" -v s="$s" -v mib="$size_mib" -v r="$rss" 'BEGIN { printf "%-34s %8.2f %10.0f %9.1f MiB\n", l, s, mib * 1048576 / s / 1e6, r / 1024 }'
    echo "$s" > "$2.median"
}
printf "%-34s %8s %10s %12s\n" "tool" "seconds" "MB/s" "peak RSS"
row "paperboy sync (durable)" "$work/pb.txt"
row "cp (not synced)" "$work/cp.txt"
row "paperboy sync + sha256 check" "$work/pbv.txt"
row "cp && sha256sum" "$work/cpv.txt"
awk -v a="$(cat "$work/pb.txt.median")" -v b="$(cat "$work/cp.txt.median")" -v c="$(cat "$work/pbv.txt.median")" -v d="$(cat "$work/cpv.txt.median")" 'BEGIN {
    printf "throughput ratio paperboy/cp: %.2fx; verified paperboy/(cp && sha256sum): %.2fx\n", b / a, d / c }'
rm -f "$work/src/big.bin" "$work/copy.bin"; rm -rf "$work/lib-big"

echo "== (b) ${count} assets of 4 KiB =="
mkdir -p "$work/src/small"
python3 - "$work" "$count" <<'PY'
import os, sys
work, count = sys.argv[1], int(sys.argv[2])
with open(os.path.join(work, "small.toml"), "w") as config:
    config.write('[library]\npath = "lib-small"\n[scheduler]\nmax_concurrent = 8\nmax_per_host = 8\n[[issues]]\nname = "small"\ndate = 2026-11-21\n')
    for i in range(count):
        name = f"f{i:06d}.bin"
        with open(os.path.join(work, "src", "small", name), "wb") as f:
            f.write(os.urandom(4096))
        config.write(f'  [[issues.assets]]\n  url = "src/small/{name}"\n  path = "{name}"\n')
PY
: > "$work/pb.txt"; : > "$work/cp.txt"
for run in $(seq "$runs"); do
    rm -rf "$work/lib-small" "$work/copy-small"; sync
    measure "$bin" sync -q --config "$work/small.toml" >> "$work/pb.txt"
    sync
    measure cp -r "$work/src/small" "$work/copy-small" >> "$work/cp.txt"
    sync
done
pb_s=$(cut -d' ' -f1 "$work/pb.txt" | median); pb_rss=$(cut -d' ' -f2 "$work/pb.txt" | sort -n | tail -1)
cp_s=$(cut -d' ' -f1 "$work/cp.txt" | median); cp_rss=$(cut -d' ' -f2 "$work/cp.txt" | sort -n | tail -1)
awk -v pb="$pb_s" -v cp="$cp_s" -v n="$count" -v pr="$pb_rss" -v cr="$cp_rss" 'BEGIN {
    printf "%-16s %8s %10s %12s\n", "tool", "seconds", "assets/s", "peak RSS"
    printf "%-16s %8.2f %10.0f %9.1f MiB\n", "paperboy sync", pb, n / pb, pr / 1024
    printf "%-16s %8.2f %10.0f %9.1f MiB\n", "cp -r", cp, n / cp, cr / 1024
    printf "paperboy rate / cp rate: %.2fx (paperboy includes config parsing, database, fsync, delivery)\n", cp / pb
}'
