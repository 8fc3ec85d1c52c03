#!/usr/bin/env bash
# Issue 29's "shared across issues" row with clones (FICLONERANGE) and with copies, on XFS.
# MANUAL: needs root (loop mounts) and mkfs.xfs (`apt-get install xfsprogs`); the test suite never
# depends on it.
#
# Two XFS images in /var/tmp, one made with reflink=1 and one with reflink=0 (the same file
# system without clones: paperboy then copies with copy_file_range), each loop-mounted. In each,
# RUNS times: a library syncs issue A (SHARED_MB MB, indexed; not measured), then issue B, which
# holds the same bytes under another name and URL (indexed) and a new 100 KB file, is synced and
# measured:
#   seconds   wall time of the second `paperboy sync`
#   fetched   bytes of B's copy nginx sent (its index and the small file not included; aim 0)
#   used      growth of the file system's used space over that sync (`df`, after `sync`)
#   shared    extents of B's copy that the file system marks shared (`filefrag -v`), of all
#   cloned    what paperboy says it cloned, copied in the kernel, read and wrote (its --verbose line)
# Images, mounts and data are removed at the end (KEEP=1 keeps the folder, unmounted).
#
# Run:  sudo Benchmarks/delta/reflink.sh
# Knobs: SHARED_MB=50 RUNS=3 IMAGE_MB=1024 TIMEOUT=300 PAPERBOY=path (default: Benchmarks/build.sh)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARED_MB=${SHARED_MB:-50}
RUNS=${RUNS:-3}
IMAGE_MB=${IMAGE_MB:-1024}
TIMEOUT=${TIMEOUT:-300}
[[ $(id -u) == 0 ]] || { echo "reflink.sh needs root (it loop-mounts two XFS images)" >&2; exit 1; }
for tool in mkfs.xfs filefrag python3 mount umount; do
    command -v $tool > /dev/null || { echo "$tool is not installed (mkfs.xfs: apt-get install xfsprogs)" >&2; exit 1; }
done
grep -qw xfs /proc/filesystems || modprobe xfs 2> /dev/null || { echo "this kernel has no XFS" >&2; exit 1; }
# shellcheck source=../nginx.sh
source "$ROOT/Benchmarks/nginx.sh"
nginx_binary > /dev/null
PAPERBOY=$("$ROOT/Benchmarks/build.sh")

WORK=$(mktemp -d /var/tmp/paperboy-reflink.XXXXXX)
MOUNTS=()
cleanup() {
    kill "${NGINX_PID:-}" 2> /dev/null && wait "$NGINX_PID" 2> /dev/null || true
    for mount in "${MOUNTS[@]}"; do umount "$mount" 2> /dev/null || umount -l "$mount" 2> /dev/null || true; done
    [[ ${KEEP:-0} == 1 ]] && { rm -f "$WORK"/*.img; echo "kept $WORK" >&2; } || rm -rf "$WORK"
}
serve_work "$WORK/serve" "log_format bytes '\$request_uri \$status \$body_bytes_sent'; access_log $WORK/serve/logs/access.log bytes;"
trap cleanup EXIT
LOG=$WORK/serve/logs/access.log
BASE="http://127.0.0.1:$PORT"
# Test data is generated here, never committed: v1 = v2 (issue A's file, issue B's copy) and small.bin.
mkdir -p "$WORK/serve/www/shared"
python3 "$ROOT/Benchmarks/delta/cases.py" shared "$WORK/serve/www/shared" "$SHARED_MB" > /dev/null
"$PAPERBOY" index --quiet "$WORK/serve/www/shared/v1.bin" "$WORK/serve/www/shared/v2.bin"

config() {  # $1 = library folder, $2 = file, $3 = with issue B (1) or not
    {
        printf '[library]\npath = "%s"\n\n[scheduler]\nretry_attempts = 1\n\n' "$1"
        printf '[[issues]]\nname = "A"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s/shared/v1.bin"\npath = "data.bin"\nindexed = true\n\n' "$BASE"
        [[ $3 == 1 ]] && printf '[[issues]]\nname = "B"\ndate = "2025-01-08"\n\n[[issues.assets]]\nurl = "%s/shared/v2.bin"\npath = "shared copy.bin"\nindexed = true\n\n[[issues.assets]]\nurl = "%s/shared/small.bin"\npath = "small.bin"\n' "$BASE" "$BASE"
        true
    } > "$2"
}

used() { sync; df --output=used -B1 "$1" | tail -1 | tr -d ' '; }

for reflink in 1 0; do
    image=$WORK/xfs-reflink$reflink.img mount=$WORK/xfs-reflink$reflink
    truncate -s "${IMAGE_MB}M" "$image"
    mkfs.xfs -q -m reflink=$reflink "$image"
    mkdir -p "$mount"
    mount -o loop "$image" "$mount"
    MOUNTS+=("$mount")
    for ((i = 1; i <= RUNS; i++)); do
        lib=$mount/lib$i
        config "$lib" "$WORK/a.toml" 0
        config "$lib" "$WORK/b.toml" 1
        timeout "$TIMEOUT" "$PAPERBOY" sync -q --config "$WORK/a.toml" || { echo "reflink=$reflink: issue A's sync failed" >&2; exit 1; }
        before=$(used "$mount")
        lines=$(wc -l < "$LOG")
        start=$(date +%s.%N)
        timeout "$TIMEOUT" "$PAPERBOY" sync --verbose --config "$WORK/b.toml" > "$WORK/sync.log" 2>&1 ||
            { echo "reflink=$reflink: issue B's sync failed" >&2; tail -5 "$WORK/sync.log" >&2; exit 1; }
        end=$(date +%s.%N)
        copy="$lib/Issues/B/shared copy.bin"
        cmp -s "$copy" "$WORK/serve/www/shared/v2.bin" || { echo "reflink=$reflink: the copy is not v2" >&2; exit 1; }
        after=$(used "$mount")
        sleep 0.2   # nginx writes the log line after the last byte
        fetched=$(tail -n +"$((lines + 1))" "$LOG" | awk '$1 == "/shared/v2.bin" {s += $3} END {print s + 0}')
        extents=$(filefrag -v "$copy" | grep -cE '^ *[0-9]+:' || true)
        shared=$(filefrag -v "$copy" | grep -E '^ *[0-9]+:' | grep -c shared || true)
        said=$(grep -o 'copying cloned [0-9]* bytes, copied [0-9]* in the kernel, read and wrote [0-9]*' "$WORK/sync.log" | head -1 |
            awk '{print $3 "/" $6 "/" $NF}')
        echo "$reflink $(echo "$end - $start" | bc) $fetched $((after - before)) $shared/$extents ${said:-?}" >> "$WORK/results.txt"
        rm -rf "$lib"
    done
done

printf '%s MB shared across issues, XFS on a loop device in /var/tmp, %d runs each (medians by time)\n' "$SHARED_MB" "$RUNS"
printf '%-10s %8s %9s %12s %16s %s\n' "xfs" seconds fetched "used (B)" "shared extents" "cloned/kernel/read-write bytes"
for reflink in 1 0; do
    label=$([[ $reflink == 1 ]] && echo "reflink=1" || echo "reflink=0")
    awk -v r="$reflink" '$1 == r' "$WORK/results.txt" | sort -k2 -n | awk -v label="$label" '
        {a[NR] = $0} END {split(a[int((NR + 1) / 2)], f, " "); printf "%-10s %8.2f %9d %12d %16s %s\n", label, f[2], f[3], f[4], f[5], f[6]}'
    awk -v r="$reflink" '$1 == r {printf "    run: %.2f s, used %d\n", $2, $4}' "$WORK/results.txt"
done
echo "kernel $(uname -r), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
