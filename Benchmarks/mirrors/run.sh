#!/usr/bin/env bash
# Many sources (issue 30): one large file over several connections, from one source and from
# two mirrors. One nginx serves the same file on 127.0.0.1 (the asset's url) and 127.0.0.2 (its
# mirror), limiting each connection (`limit_rate`, 30m by default, as the issue's setup), so
# one connection is the bottleneck; on 127.0.0.2 `/stall/` sends 1 MB at that rate and then
# 1 byte a second (`limit_rate_after 1m; limit_rate 1;`): a mirror that stalls.
#
# Rows, each tool once per round (paired), median seconds of RUNS rounds:
#   curl                      one connection to the url (the issue's anchor)
#   paperboy-1m-cN            `paperboy sync` (release build, `sha256` checked), the url alone,
#                             `connections_per_asset = N` for N in CONNECTIONS
#   paperboy-2m-cN            the url and its mirror (`mirrors = [...]`), N = 2 and 4
#   paperboy-stall-cN         the url and the stalling mirror, N = 2 and 4
#   aria2c-2m-s2x1, -s4x2     aria2c with both URLs (`-s2 -x1`, `-s4 -x2`), when installed
#   aria2c-stall-s2x1, -s4x2  aria2c with the url and the stalling mirror
# Then the aims: two mirrors with 2 connections >= 1.9x one connection and >= aria2c -s2 -x1;
# with 4 >= 3.5x and >= aria2c -s4 -x2; the stalling mirror <= 1.05x the url alone with the
# same connections.
#
# nginx's limit counts a request's time from its start, and the first bytes of each response
# fill the socket's send buffer at once (on loopback up to a few MB): every request gets those
# bytes ahead of the rate, so a client making more requests gets a little more than RATE per
# connection (16 MiB ranges came at 34-35 MB/s, one 128 MiB GET at 31 MB/s). SNDBUF=64k (the
# listen sockets' send buffer) takes that away: 16 and 64 MiB then came at the same 32 MB/s.
#
# Run by hand, on a quiet machine:  Benchmarks/mirrors/run.sh
# Knobs (environment): BIG_MB=1024 RATE=30m RUNS=3 CONNECTIONS="1 2 4" TIMEOUT=300 (per run)
#   SNDBUF=64k         (nginx's send buffer per connection; default the system's)
#   WORK=/var/tmp/...  (data and downloads; default a new folder in /var/tmp)
#   PAPERBOY=path      (a built paperboy; default: Benchmarks/build.sh, a release build in SCRATCH)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIG_MB=${BIG_MB:-1024}
RATE=${RATE:-30m}
RUNS=${RUNS:-3}
CONNECTIONS=${CONNECTIONS:-1 2 4}
TIMEOUT=${TIMEOUT:-300}
WORK=${WORK:-$(mktemp -d /var/tmp/paperboy-mirrors-bench.XXXXXX)}
# shellcheck source=../nginx.sh
source "$ROOT/Benchmarks/nginx.sh"
nginx_binary > /dev/null

PAPERBOY=$("$ROOT/Benchmarks/build.sh")
mkdir -p "$WORK"/{www,tmp,logs,out}
echo "work folder: $WORK" >&2
# Test data is generated here, never committed.
if [[ ! -f $WORK/www/big.bin ]] || (( $(stat -c %s "$WORK/www/big.bin") != BIG_MB * 1048576 )); then
    head -c $((BIG_MB * 1048576)) /dev/urandom > "$WORK/www/big.bin"
fi

PORT=$(free_port)
NGINX_LISTEN_OPTIONS=${SNDBUF:+sndbuf=$SNDBUF}
# One file, one time: the url and the mirror give the same ETag (nginx's is the time and size).
start_nginx "$WORK" "log_format ranges '\$server_addr \$connection \$status \"\$http_range\" \$body_bytes_sent'; access_log $WORK/logs/access.log ranges;" \
    "listen 127.0.0.2:$PORT${NGINX_LISTEN_OPTIONS:+ $NGINX_LISTEN_OPTIONS}; limit_rate $RATE; location /stall/ { alias $WORK/www/; limit_rate_after 1m; limit_rate 1; }"
URL="http://127.0.0.1:$PORT/big.bin"
MIRROR="http://127.0.0.2:$PORT/big.bin"
STALL="http://127.0.0.2:$PORT/stall/big.bin"
SHA=$(sha256sum "$WORK/www/big.bin" | cut -d' ' -f1)

# config NAME CONNECTIONS [MIRROR]: a configuration with the one asset.
config() {
    local mirrors=""
    [[ -n ${3:-} ]] && mirrors="mirrors = [\"$3\"]"
    printf '[library]\npath = "%s/out/lib"\n\n[scheduler]\nretry_attempts = 1\nconnections_per_asset = %d\n\n[[issues]]\nname = "bench"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s"\nsha256 = "%s"\n%s\n' \
        "$WORK" "$2" "$URL" "$SHA" "$mirrors" > "$WORK/$1.toml"
}

TOOLS=(curl)
for n in $CONNECTIONS; do config "paperboy-1m-c$n" "$n"; TOOLS+=("paperboy-1m-c$n"); done
for n in 2 4; do
    config "paperboy-2m-c$n" "$n" "$MIRROR"
    config "paperboy-stall-c$n" "$n" "$STALL"
    TOOLS+=("paperboy-2m-c$n" "paperboy-stall-c$n")
done
command -v aria2c > /dev/null && TOOLS+=(aria2c-2m-s2x1 aria2c-2m-s4x2 aria2c-stall-s2x1 aria2c-stall-s4x2)

# run NAME COMMAND… : in a fresh output folder; appends the seconds to result-NAME.txt.
run() {
    local name=$1; shift
    rm -rf "$WORK/out"; mkdir -p "$WORK/out"
    local start end
    start=$(date +%s.%N)
    if ! (cd "$WORK/out" && timeout "$TIMEOUT" "$@" > "$WORK/tool.log" 2>&1); then
        echo "$name failed (or took more than $TIMEOUT s):" >&2; tail -5 "$WORK/tool.log" >&2; return 0
    fi
    end=$(date +%s.%N)
    echo "$end - $start" | bc >> "$WORK/result-$name.txt"
}

# aria2c with the URLs given as mirrors of one file (-s: pieces at once, -x: connections per server).
ARIA=(aria2c -q --file-allocation=none --allow-overwrite=true -o big.bin)

rm -f "$WORK"/result-*.txt
for ((i = 1; i <= RUNS; i++)); do
    echo "run $i of $RUNS…" >&2
    for tool in "${TOOLS[@]}"; do   # paired: every tool once per round
        case $tool in
            curl) run curl curl -sS -o big.bin "$URL" ;;
            paperboy-*) run "$tool" "$PAPERBOY" sync -q --config "$WORK/$tool.toml" ;;
            aria2c-2m-s2x1) run "$tool" "${ARIA[@]}" -s 2 -x 1 "$URL" "$MIRROR" ;;
            aria2c-2m-s4x2) run "$tool" "${ARIA[@]}" -s 4 -x 2 "$URL" "$MIRROR" ;;
            aria2c-stall-s2x1) run "$tool" "${ARIA[@]}" -s 2 -x 1 "$URL" "$STALL" ;;
            aria2c-stall-s4x2) run "$tool" "${ARIA[@]}" -s 4 -x 2 "$URL" "$STALL" ;;
        esac
    done
done

median() { sort -n "$1" | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print a[int((NR + 1) / 2)]}'; }
seconds() { [[ -f $WORK/result-$1.txt ]] && median "$WORK/result-$1.txt" || echo nan; }
base=$(seconds curl)
printf '%s MiB, limit_rate %s per connection%s, median of %d runs\n' "$BIG_MB" "$RATE" "${SNDBUF:+, sndbuf $SNDBUF}" "$RUNS"
printf '%-20s %9s %9s %8s\n' tool seconds MB/s "x curl"
for tool in "${TOOLS[@]}"; do
    s=$(seconds "$tool")
    [[ $s == nan ]] && { printf '%-20s failed\n' "$tool"; continue; }
    awk -v t="$tool" -v s="$s" -v b="$base" -v mb="$BIG_MB" \
        'BEGIN {printf "%-20s %9.2f %9.1f %8.2f\n", t, s, mb * 1.048576 / s, b / s}'
done

# ratio LABEL A B AIM: prints A's speed-up over B (B's seconds / A's), against the aim.
ratio() {
    local a b
    a=$(seconds "$2") b=$(seconds "$3")
    [[ $a == nan || $b == nan ]] && { printf '%-52s n/a\n' "$1"; return; }
    awk -v l="$1" -v a="$a" -v b="$b" -v aim="$4" 'BEGIN {printf "%-52s %6.2fx  (aim %s)\n", l, b / a, aim}'
}
echo
echo "aims (speed-up: the second row's seconds over the first's):"
ratio "two mirrors, 2 conn, over paperboy 1 conn" paperboy-2m-c2 paperboy-1m-c1 ">= 1.9"
ratio "two mirrors, 2 conn, over aria2c -s2 -x1" paperboy-2m-c2 aria2c-2m-s2x1 ">= 1.0"
ratio "two mirrors, 4 conn, over paperboy 1 conn" paperboy-2m-c4 paperboy-1m-c1 ">= 3.5"
ratio "two mirrors, 4 conn, over aria2c -s4 -x2" paperboy-2m-c4 aria2c-2m-s4x2 ">= 1.0"
ratio "one mirror, 2 conn, over 1 conn" paperboy-1m-c2 paperboy-1m-c1 ">= 1.9"
ratio "one mirror, 4 conn, over 1 conn" paperboy-1m-c4 paperboy-1m-c1 ">= 3.5"
ratio "stalling mirror, 2 conn, over the url alone (2 conn)" paperboy-stall-c2 paperboy-1m-c2 ">= 0.952 (<= 1.05x the time)"
ratio "stalling mirror, 4 conn, over the url alone (4 conn)" paperboy-stall-c4 paperboy-1m-c4 ">= 0.952 (<= 1.05x the time)"
ratio "aria2c stalling mirror -s2 -x1, over paperboy url alone 2" aria2c-stall-s2x1 paperboy-1m-c2 "for comparison"
ratio "aria2c stalling mirror -s4 -x2, over paperboy url alone 4" aria2c-stall-s4x2 paperboy-1m-c4 "for comparison"
