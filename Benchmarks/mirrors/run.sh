#!/usr/bin/env bash
# Many sources (issue 30), the slice that exists: one large file over several connections from
# one source. nginx on 127.0.0.1 limits each connection (`limit_rate`, 30m by default, as the
# issue's setup), so one connection is the bottleneck; `paperboy sync` (release build) with
# `connections_per_asset` 1, 2 and 4 against curl (one connection) and, when installed,
# aria2c -x2 -s2 and -x4 -s4. Prints each tool's median seconds and its speed-up over curl.
#
# Run by hand, on a quiet machine:  Benchmarks/mirrors/run.sh
# Knobs (environment): BIG_MB=256 RATE=30m RUNS=3 CONNECTIONS="1 2 4"
#   WORK=/var/tmp/...  (data and downloads; default a new folder in /var/tmp)
#   PAPERBOY=path      (a built paperboy; default: Benchmarks/build.sh, a release build in SCRATCH)
# Aims (issue 30, one mirror): 2 connections >= 1.9x one, 4 connections >= 3.5x.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIG_MB=${BIG_MB:-256}
RATE=${RATE:-30m}
RUNS=${RUNS:-3}
CONNECTIONS=${CONNECTIONS:-1 2 4}
WORK=${WORK:-$(mktemp -d /var/tmp/paperboy-mirrors-bench.XXXXXX)}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x $NGINX ]] || { echo "nginx is not installed" >&2; exit 1; }

PAPERBOY=$("$ROOT/Benchmarks/build.sh")
mkdir -p "$WORK"/{www,tmp,logs,out}
echo "work folder: $WORK" >&2
# Test data is generated here, never committed.
if [[ ! -f $WORK/www/big.bin ]] || (( $(stat -c %s "$WORK/www/big.bin") != BIG_MB * 1048576 )); then
    head -c $((BIG_MB * 1048576)) /dev/urandom > "$WORK/www/big.bin"
fi

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
USER_LINE=""
[[ $(id -u) == 0 ]] && USER_LINE="user root;"
cat > "$WORK/nginx.conf" <<EOF
$USER_LINE
worker_processes 2;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/logs/error.log warn;
events { worker_connections 1024; }
http {
    log_format ranges '\$connection \$status "\$http_range" \$body_bytes_sent';
    access_log $WORK/logs/access.log ranges;
    sendfile on;
    client_body_temp_path $WORK/tmp/body;
    proxy_temp_path $WORK/tmp/proxy;
    fastcgi_temp_path $WORK/tmp/fastcgi;
    uwsgi_temp_path $WORK/tmp/uwsgi;
    scgi_temp_path $WORK/tmp/scgi;
    server {
        listen 127.0.0.1:$PORT;
        root $WORK/www;
        limit_rate $RATE;
    }
}
EOF
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -e "$WORK/logs/error.log" &
NGINX_PID=$!
trap 'kill $NGINX_PID 2>/dev/null; wait $NGINX_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break
    sleep 0.05
done
URL="http://127.0.0.1:$PORT/big.bin"
SHA=$(sha256sum "$WORK/www/big.bin" | cut -d' ' -f1)

for n in $CONNECTIONS; do
    printf '[library]\npath = "%s/out/lib"\n\n[scheduler]\nretry_attempts = 1\nconnections_per_asset = %d\n\n[[issues]]\nname = "bench"\ndate = "2025-01-01"\n\n[[issues.assets]]\nurl = "%s"\nsha256 = "%s"\n' \
        "$WORK" "$n" "$URL" "$SHA" > "$WORK/paperboy-$n.toml"
done

# run NAME COMMAND… : in a fresh output folder; appends the seconds to result-NAME.txt.
run() {
    local name=$1; shift
    rm -rf "$WORK/out"; mkdir -p "$WORK/out"
    local start end
    start=$(date +%s.%N)
    if ! (cd "$WORK/out" && "$@" > "$WORK/tool.log" 2>&1); then
        echo "$name failed:" >&2; tail -5 "$WORK/tool.log" >&2; return 0
    fi
    end=$(date +%s.%N)
    echo "$end - $start" | bc >> "$WORK/result-$name.txt"
}

TOOLS=(curl)
for n in $CONNECTIONS; do TOOLS+=("paperboy-c$n"); done
command -v aria2c > /dev/null && TOOLS+=(aria2c-x2 aria2c-x4)
rm -f "$WORK"/result-*.txt
for ((i = 1; i <= RUNS; i++)); do
    echo "run $i of $RUNS…" >&2
    for tool in "${TOOLS[@]}"; do   # paired: every tool once per round
        case $tool in
            curl) run curl curl -sS -o big.bin "$URL" ;;
            paperboy-c*) run "$tool" "$PAPERBOY" sync -q --config "$WORK/paperboy-${tool#paperboy-c}.toml" ;;
            aria2c-x*) n=${tool#aria2c-x}
                run "$tool" aria2c -q --file-allocation=none --allow-overwrite=true -x "$n" -s "$n" -o big.bin "$URL" ;;
        esac
    done
done

median() { sort -n "$1" | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else print a[int((NR + 1) / 2)]}'; }
base=$(median "$WORK/result-curl.txt")
printf '%s MiB, limit_rate %s per connection, median of %d runs\n' "$BIG_MB" "$RATE" "$RUNS"
printf '%-14s %9s %9s %8s\n' tool seconds MB/s "x curl"
for tool in "${TOOLS[@]}"; do
    [[ -f $WORK/result-$tool.txt ]] || { printf '%-14s failed\n' "$tool"; continue; }
    s=$(median "$WORK/result-$tool.txt")
    awk -v t="$tool" -v s="$s" -v b="$base" -v mb="$BIG_MB" \
        'BEGIN {printf "%-14s %9.2f %9.1f %8.2f\n", t, s, mb * 1.048576 / s, b / s}'
done
