#!/usr/bin/env bash
# Issue 29's delta rows over HTTP: a reader holding version 1 of a file syncs version 2.
# One nginx on loopback serves both versions, v2's chunk index (`paperboy index`) and v2's zsync
# control file (`zsyncmake -u URL`); bytes are counted AT THE SERVER (the access log's
# $body_bytes_sent summed over the v2 run, the index or control file included).
#
# Cases (Benchmarks/delta/cases.py makes the data):
#   corrected  v2 = v1 with 10 regions of 400 KB rewritten and 1 MB inserted in the middle
#   unchanged  v2 = v1
#   next       v2 shares 60 % of v1's content in shuffled 1 MB blocks (40 % new)
#   shared     issue 29's "shared across issues": issue A holds v1 (SHARED_MB, indexed); issue B
#              holds the same bytes under another name and URL (v2.bin, indexed) and a new
#              100 KB file; the bytes of v2.bin fetched are counted apart (the aim: 0)
#   repair     3 bytes flipped in 3 chunks of a partial file killed at 90 % (damage.py, 1 GiB;
#              re-fetched bytes counted at nginx; aim <= the 3 chunks)
#   kill       an indexed download SIGKILLed 5 times at random points, then completed
#              (damage.py; aim: re-fetched <= the chunks in flight)
#   repair and kill run only when named, first: CASES="repair kill" (their file is
#   DAMAGE_SIZE_MB MiB, default 1024; damage.py's header has their other knobs)
#
# Rows, each tool once per round (paired), medians of RUNS rounds:
#   paperboy   v1 synced first (url v1.bin, not measured), then the configuration names the
#              corrected file (url v2.bin, `indexed = true`) at the same issue and path, and the
#              second `paperboy sync` is measured (as Tests/PaperboyCLITests/IndexedSyncTests);
#              shared: v1 indexed in issue A, then issue B added beside it (v2.bin at another
#              path, and small.bin)
#   pb-v1idx   the same with v1 indexed too (`indexed = true` for v1.bin: a publisher indexing every
#              release): the chunks recorded at v1's delivery stand for v1, which is not cut again
#   pb-zsync   the same, with `index = "URL/v2.bin.zsync"`: paperboy reading zsync's control file
#              (a rolling match against v1; not in the shared case, which a seed-only match cannot do)
#   zsync      `zsync -i v1.bin -o v2.bin URL/v2.bin.zsync` with v1 copied beside it first
#   curl       the whole v2 (the reference)
# Then the aims: corrected, bytes <= 1.3 x changed + the index and time <= zsync's; unchanged,
# only the index; next, <= 45 % of v2's size; shared, 0 bytes of v2.bin (its index and the
# small file are all that is fetched).
# Also the CPU seconds (user + system) of each measured command, and how long paperboy's plan took
# (its "planned in T ms" log line: for pb-zsync the rolling match over v1).
#
# Run by hand, on a quiet machine:  Benchmarks/delta/run.sh
# Knobs (environment): SIZE_MB=200 (v1's size, MB of 10^6 bytes) RUNS=3 TIMEOUT=300 (per run)
#   SHARED_MB=50 (the shared case's size) CASES="corrected unchanged next shared" (add repair, kill)
#   DAMAGE_SIZE_MB=1024 (their file, MiB)
#   WORK=/var/tmp/...  (data and downloads; default a new folder in /var/tmp, removed at the end
#                      unless KEEP=1)
#   PAPERBOY=path      (a built paperboy; default: Benchmarks/build.sh, a release build in SCRATCH)
# Needs nginx, zsync and zsyncmake (Debian's `zsync` package, 0.6.2), curl, python3.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SIZE_MB=${SIZE_MB:-200}
RUNS=${RUNS:-3}
TIMEOUT=${TIMEOUT:-300}
SHARED_MB=${SHARED_MB:-50}
CASES=${CASES:-corrected unchanged next shared}
DAMAGE=$(printf '%s\n' $CASES | grep -xE 'repair|kill' | xargs || true)
CASES=$(printf '%s\n' $CASES | grep -vxE 'repair|kill' | xargs || true)
WORK=${WORK:-$(mktemp -d /var/tmp/paperboy-delta-bench.XXXXXX)}
for tool in zsync zsyncmake curl python3; do
    command -v $tool > /dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
# shellcheck source=../nginx.sh
source "$ROOT/Benchmarks/nginx.sh"
nginx_binary > /dev/null

PAPERBOY=$("$ROOT/Benchmarks/build.sh")
if [[ -n $DAMAGE ]]; then
    # shellcheck disable=SC2086
    env -u SIZE_MB -u WORK ${DAMAGE_SIZE_MB:+SIZE_MB=$DAMAGE_SIZE_MB} python3 "$ROOT/Benchmarks/delta/damage.py" "$PAPERBOY" $DAMAGE
    [[ -n $CASES ]] || { rmdir "$WORK" 2>/dev/null || true; exit 0; }
fi
serve_work "$WORK" "log_format bytes '\$request_uri \$status \$body_bytes_sent'; access_log $WORK/logs/access.log bytes;"
[[ ${KEEP:-0} == 1 ]] || trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true; rm -rf "$WORK"' EXIT
BASE="http://127.0.0.1:$PORT"
LOG=$WORK/logs/access.log

# Test data is generated here, never committed: v1, v2, v2's index and v2's control file.
declare -A CHANGED INDEX_BYTES CONTROL_BYTES V2_BYTES
for case in $CASES; do
    dir=$WORK/www/$case
    mkdir -p "$dir"
    size=$SIZE_MB
    [[ $case == shared ]] && size=$SHARED_MB
    CHANGED[$case]=$(python3 "$ROOT/Benchmarks/delta/cases.py" "$case" "$dir" "$size")
    "$PAPERBOY" index --quiet "$dir/v2.bin"
    # v1 is indexed too: issue A's file in the shared case (only an indexed asset's chunks are
    # recorded for others), and the pb-v1idx row's v1 (a publisher indexing every release).
    "$PAPERBOY" index --quiet "$dir/v1.bin"
    zsyncmake -u "$BASE/$case/v2.bin" -o "$dir/v2.bin.zsync" "$dir/v2.bin"
    INDEX_BYTES[$case]=$(stat -c %s "$dir/v2.bin.pbidx")
    CONTROL_BYTES[$case]=$(stat -c %s "$dir/v2.bin.zsync")
    V2_BYTES[$case]=$(stat -c %s "$dir/v2.bin")
done

config() {  # $1 = case, $2 = version (v1 | v1i, v1 indexed | v2 | v2z, v2 by its zsync control file): the one asset at the same issue and path
    local indexed="" file=$WORK/paperboy-$1-$2.toml
    [[ $2 == v2 || $2 == v1i || $1 == shared ]] && indexed="indexed = true"
    [[ $2 == v2z ]] && indexed="index = \"$BASE/$1/v2.bin.zsync\""
    if [[ $1 == shared ]]; then   # v1 in issue A stays; v2 comes in issue B, under another name
        printf '[library]\npath = "%s/out/lib"\n\n[scheduler]\nretry_attempts = 1\n\n[[issues]]\nname = "bench"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s/%s/v1.bin"\npath = "data.bin"\n%s\n' \
            "$WORK" "$BASE" "$1" "$indexed" > "$file"
        [[ $2 == v2 ]] && printf '\n[[issues]]\nname = "other"\ndate = "2025-01-08"\n\n[[issues.assets]]\nurl = "%s/%s/v2.bin"\npath = "shared copy.bin"\n%s\n\n[[issues.assets]]\nurl = "%s/%s/small.bin"\npath = "small.bin"\n' \
            "$BASE" "$1" "$indexed" "$BASE" "$1" >> "$file"
        return 0
    fi
    printf '[library]\npath = "%s/out/lib"\n\n[scheduler]\nretry_attempts = 1\n\n[[issues]]\nname = "bench"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s/%s/%s.bin"\npath = "data.bin"\n%s\n' \
        "$WORK" "$BASE" "$1" "${2%[zi]}" "$indexed" > "$file"
}

# measure NAME CASE DELIVERED COMMAND…: runs COMMAND in out/ and appends "seconds bytes filebytes cpu"
# to result-CASE-NAME.txt: wall time, the bytes nginx sent meanwhile, those of them that were
# v2.bin's (its index or control file not included), and the command's CPU seconds (user + system);
# DELIVERED must then be v2. paperboy's "planned in T ms" line, if any, goes to plan-CASE-NAME.txt.
measure() {
    local name=$1 case=$2 delivered=$3; shift 3
    local lines start end bytes
    lines=$(wc -l < "$LOG")
    start=$(date +%s.%N)
    if ! (cd "$WORK/out" && /usr/bin/time -f '%U %S' -o "$WORK/cpu.txt" timeout "$TIMEOUT" "$@" > "$WORK/tool.log" 2>&1); then
        echo "$name ($case) failed (or took more than $TIMEOUT s):" >&2; tail -5 "$WORK/tool.log" >&2; return 0
    fi
    end=$(date +%s.%N)
    if ! cmp -s "$WORK/out/$delivered" "$WORK/www/$case/v2.bin"; then
        echo "$name ($case): $delivered is not v2" >&2; return 0
    fi
    sleep 0.2   # nginx writes the log line after the last byte; let it land
    bytes=$(tail -n +"$((lines + 1))" "$LOG" | awk -v f="/$case/v2.bin" '{s += $3; if ($1 == f) o += $3} END {print s + 0, o + 0}')
    echo "$(echo "$end - $start" | bc) $bytes $(awk '{print $1 + $2}' "$WORK/cpu.txt")" >> "$WORK/result-$case-$name.txt"
    grep -o 'planned in [0-9.]* ms' "$WORK/tool.log" | awk '{print $3}' | tail -1 >> "$WORK/plan-$case-$name.txt" || true
}

fresh() { rm -rf "$WORK/out"; mkdir -p "$WORK/out"; sync; }

rm -f "$WORK"/result-*.txt "$WORK"/plan-*.txt
for case in $CASES; do config "$case" v1; config "$case" v1i; config "$case" v2; config "$case" v2z; done
for ((i = 1; i <= RUNS; i++)); do
    echo "run $i of $RUNS…" >&2
    for case in $CASES; do   # paired: every tool once per round
        fresh
        (cd "$WORK/out" && timeout "$TIMEOUT" "$PAPERBOY" sync -q --config "$WORK/paperboy-$case-v1.toml") ||
            { echo "paperboy ($case): the v1 sync failed" >&2; continue; }
        delivered=lib/Issues/bench/data.bin
        [[ $case == shared ]] && delivered="lib/Issues/other/shared copy.bin"
        measure paperboy "$case" "$delivered" "$PAPERBOY" sync --verbose --config "$WORK/paperboy-$case-v2.toml"
        if [[ $case != shared ]]; then
            fresh
            (cd "$WORK/out" && timeout "$TIMEOUT" "$PAPERBOY" sync -q --config "$WORK/paperboy-$case-v1.toml") ||
                { echo "paperboy ($case): the v1 sync failed" >&2; continue; }
            measure pb-zsync "$case" "$delivered" "$PAPERBOY" sync --verbose --config "$WORK/paperboy-$case-v2z.toml"
            fresh
            (cd "$WORK/out" && timeout "$TIMEOUT" "$PAPERBOY" sync -q --config "$WORK/paperboy-$case-v1i.toml") ||
                { echo "paperboy ($case): the indexed v1 sync failed" >&2; continue; }
            measure pb-v1idx "$case" "$delivered" "$PAPERBOY" sync --verbose --config "$WORK/paperboy-$case-v2.toml"
        fi
        fresh
        cp "$WORK/www/$case/v1.bin" "$WORK/out/v1.bin"; sync
        measure zsync "$case" v2.bin zsync -q -i v1.bin -o v2.bin "$BASE/$case/v2.bin.zsync"
        fresh
        measure curl "$case" v2.bin curl -sS -o v2.bin "$BASE/$case/v2.bin"
    done
done

median() { sort -n "$1" | awk '{a[NR] = $0} END {if (NR == 0) print "nan nan nan"; else print a[int((NR + 1) / 2)]}'; }
figures() { [[ -f $WORK/result-$1-$2.txt ]] && median "$WORK/result-$1-$2.txt" || echo "nan nan nan"; }
printf '%s MB v1 (shared: %s MB), medians of %d paired runs, bytes counted at nginx (the index or control file included)\n' \
    "$SIZE_MB" "$SHARED_MB" "$RUNS"
printf '%-10s %-9s %9s %13s %11s %10s %10s %8s %9s\n' case tool seconds bytes "x changed" "x zsync s" "x zsync B" "cpu s" "plan ms"
for case in $CASES; do
    read -r zs zb _ < <(figures "$case" zsync)
    for tool in paperboy pb-v1idx pb-zsync zsync curl; do
        [[ ($tool == pb-zsync || $tool == pb-v1idx) && $case == shared ]] && continue
        read -r s b _ cpu < <(figures "$case" "$tool")
        [[ $s == nan ]] && { printf '%-10s %-9s failed\n' "$case" "$tool"; continue; }
        plan=$( [[ -s $WORK/plan-$case-$tool.txt ]] && sort -n "$WORK/plan-$case-$tool.txt" | awk '{a[NR] = $0} END {print a[int((NR + 1) / 2)]}' || echo -)
        awk -v c="$case" -v t="$tool" -v s="$s" -v b="$b" -v ch="${CHANGED[$case]}" -v zs="$zs" -v zb="$zb" -v cpu="${cpu:-nan}" -v plan="$plan" 'BEGIN {
            ratio = ch > 0 ? sprintf("%.2f", b / ch) : "-"
            ts = zs != "nan" ? sprintf("%.2f", s / zs) : "-"
            tb = zb != "nan" && zb > 0 ? sprintf("%.2f", b / zb) : "-"
            printf "%-10s %-9s %9.2f %13d %11s %10s %10s %8.2f %9s\n", c, t, s, b, ratio, ts, tb, cpu, plan }'
    done
done

echo
echo "aims:"
for case in $CASES; do
    read -r s b f _ < <(figures "$case" paperboy)
    read -r zs _ _ < <(figures "$case" zsync)
    [[ $s == nan ]] && { echo "$case: paperboy failed"; continue; }
    ch=${CHANGED[$case]} ix=${INDEX_BYTES[$case]} v2=${V2_BYTES[$case]}
    case $case in
        corrected) read -r si _ < <(figures "$case" pb-v1idx)
            awk -v b="$b" -v ch="$ch" -v ix="$ix" -v s="$s" -v si="$si" -v zs="$zs" 'BEGIN {
            limit = 1.3 * ch + ix
            printf "corrected: %d bytes <= 1.3 x %d + index %d = %d: %s; %.2f s <= zsync %.2f s: %s (v1 indexed: %.2f s: %s)\n", b, ch, ix, limit,
                b <= limit ? "met" : "MISSED", s, zs, zs != "nan" && s <= zs ? "met" : "MISSED", si, si != "nan" && zs != "nan" && si <= zs ? "met" : "MISSED" }' ;;
        unchanged) awk -v b="$b" -v ix="$ix" -v cb="${CONTROL_BYTES[$case]}" 'BEGIN {
            printf "unchanged: %d bytes, the index is %d: %s (zsync control file %d bytes)\n", b, ix, b == ix ? "met" : "MISSED", cb }' ;;
        next) awk -v b="$b" -v v2="$v2" 'BEGIN {
            printf "next: %d bytes = %.1f %% of v2 (%d): %s (<= 45 %%)\n", b, 100 * b / v2, v2, b <= 0.45 * v2 ? "met" : "MISSED" }' ;;
        shared) awk -v b="$b" -v f="$f" -v v2="$v2" -v ix="$ix" 'BEGIN {
            printf "shared: %d bytes of the %d-byte file fetched: %s (0); %d in all (its index %d, the 100 KB file)\n", f, v2, f == 0 ? "met" : "MISSED", b, ix }' ;;
    esac
done
echo
echo "indexes: $(for c in $CASES; do printf '%s %d B (zsync %d B)  ' "$c" "${INDEX_BYTES[$c]}" "${CONTROL_BYTES[$c]}"; done)"
echo "file system: $(df -T "$WORK" | awk 'NR==2 {print $2}'), load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
