#!/usr/bin/env bash
# HTTP side by side: `paperboy sync` (release build) against curl, wget, aria2c and a small
# URLSession program (Benchmarks/http/urlsession.swift, FoundationNetworking), all downloading
# from one nginx on loopback into the same file system.
#
#   (a) one large file (1 GiB by default)        → MB/s, peak RSS
#   (b) many small files (1,000 × 64 KiB)        → files/s, peak RSS
#   (c) "tls": the same small files over HTTPS from one host (a CA made at run time, given to
#       paperboy as `[[credentials]] ca_file`, to curl as --cacert; nginx `listen … ssl http2`):
#       paperboy with HTTP/2 (one connection, streams multiplexed) and with HTTP/1.1 forced
#       (asset option `http_version = "1.1"`), against `curl -Z --parallel-max 8` with --http2
#       and with --http1.1: the same protocol compared with the same protocol
#
# Run by hand, on a quiet machine:  Benchmarks/http/run.sh
# Knobs (environment): BIG_MB=1024 SMALL_COUNT=1000 SMALL_KB=64 RUNS=3 PARALLEL=8
#   WORK=/var/tmp/...  (where data and downloads live; default a new folder in /var/tmp)
#   TMPFS=1            (WORK defaults to a new folder in /dev/shm: every tool writes to tmpfs,
#                      so the file system is not the limit; needs about 2 × BIG_MB of memory)
#   NOSYNC=1           (also run paperboy with `sync_to_disk = false`: no fdatasync at all)
#   OUTPUT=0           (leave out "paperboy-out": the small files by `paperboy sync` without -q,
#                      its output to a file: what listening to the library's events costs)
#   LOCAL=0            (leave out "paperboy-local": paperboy copying the same small files through
#                      the local-file transport, file:// URLs, no network: the library's own cost)
#   DAEMON=0           (leave out "paperboy-daemon": `paperboy sync -q` of the small files through a
#                      daemon started on the same library beforehand, not timed; its CPU is added)
#   CASES="big small tls"  (which cases to run)
#   PAPERBOY=path      (a built paperboy; default: Benchmarks/build.sh, a release build with
#                      the Swift runtime linked statically, in SCRATCH)
#   SCRATCH=/var/tmp/paperboy-bench-static  (release build folder, apart from .build so it
#                      does not hold SwiftPM's lock on the debug build)
#   BASELINE=path      (another paperboy binary, e.g. an earlier commit's, run as "paperboy-base"
#                      in the same rounds: the honest way to show what a change gained)
# Needs nginx and /usr/bin/time; wget and aria2c are compared when installed.
set -euo pipefail

# A relative BASELINE is the caller's: resolved before any `cd`.
if [[ -n ${BASELINE:-} ]]; then
    BASELINE=$(realpath -e "$BASELINE") && [[ -x $BASELINE ]] || { echo "BASELINE is not an executable file" >&2; exit 1; }
fi
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIG_MB=${BIG_MB:-1024}
SMALL_COUNT=${SMALL_COUNT:-1000}
SMALL_KB=${SMALL_KB:-64}
RUNS=${RUNS:-3}
PARALLEL=${PARALLEL:-8}
NOSYNC=${NOSYNC:-0}
LOCAL=${LOCAL:-1}
OUTPUT=${OUTPUT:-1}
DAEMON=${DAEMON:-1}
CASES=${CASES:-big small tls}
if [[ ${TMPFS:-0} == 1 ]]; then
    WORK=${WORK:-$(mktemp -d /dev/shm/paperboy-http-bench.XXXXXX)}
else
    WORK=${WORK:-$(mktemp -d /var/tmp/paperboy-http-bench.XXXXXX)}
fi
# shellcheck source=../nginx.sh
source "$ROOT/Benchmarks/nginx.sh"
nginx_binary > /dev/null
[[ -x /usr/bin/time ]] || { echo "/usr/bin/time is not installed (apt-get install time)" >&2; exit 1; }

PAPERBOY=$("$ROOT/Benchmarks/build.sh")
# The URLSession program, optimised, as a Swift developer would build it. Its downloads land in
# a temporary folder on the same file system (TMPDIR below), so the final move is a rename.
URLSESSION=""
if [[ " $CASES " == *" big "* || " $CASES " == *" small "* ]] && command -v swiftc > /dev/null && mkdir -p "$WORK/bin" &&
   swiftc -O -swift-version 6 -o "$WORK/bin/urlsession-fetch" "$ROOT/Benchmarks/http/urlsession.swift" >&2; then
    URLSESSION=$WORK/bin/urlsession-fetch
fi

mkdir -p "$WORK"/{www/small,tmp,logs,out,urlsession-tmp}
echo "work folder: $WORK" >&2

# Test data is generated here, never committed.
if [[ ! -f $WORK/www/big.bin ]] || (( $(stat -c %s "$WORK/www/big.bin") != BIG_MB * 1048576 )); then
    head -c $((BIG_MB * 1048576)) /dev/urandom > "$WORK/www/big.bin"
fi
if (( $(find "$WORK/www/small" -type f | wc -l) != SMALL_COUNT )); then
    rm -f "$WORK"/www/small/*
    head -c $((SMALL_COUNT * SMALL_KB * 1024)) /dev/urandom |
        split -a 5 -d -b $((SMALL_KB * 1024)) - "$WORK/www/small/f"
fi

PORT=$(free_port)
TLS_PORT=$(free_port)
# A certificate authority made for this run, and the server's certificate for 127.0.0.1 signed
# by it: every tool verifies the server against it (never -k).
if [[ ! -f $WORK/tls/server.pem ]]; then
    mkdir -p "$WORK/tls"
    (cd "$WORK/tls" &&
     openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=paperboy benchmark CA" &&
     openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=127.0.0.1" &&
     printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > server.ext &&
     openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 -extfile server.ext) > /dev/null 2>&1
fi
start_nginx "$WORK" "access_log off; tcp_nopush on; keepalive_requests 100000;
    server {
        listen 127.0.0.1:$TLS_PORT ssl http2;
        ssl_certificate $WORK/tls/server.pem;
        ssl_certificate_key $WORK/tls/server.key;
        root $WORK/www;
    }"
BASE="http://127.0.0.1:$PORT"
TLS_BASE="https://127.0.0.1:$TLS_PORT"

# Lists for the other tools.
echo "$BASE/big.bin" > "$WORK/big-url.txt"
: > "$WORK/small-urls.txt"
: > "$WORK/small-curl.txt"
for file in "$WORK"/www/small/*; do
    name=$(basename "$file")
    echo "$BASE/small/$name" >> "$WORK/small-urls.txt"
    printf 'url = "%s/small/%s"\noutput = "%s"\n' "$BASE" "$name" "$name" >> "$WORK/small-curl.txt"
done
sed "s|$BASE|$TLS_BASE|" "$WORK/small-curl.txt" > "$WORK/small-curl-tls.txt"

paperboy_config() {  # $1 = case, $2 = output folder, $3 = config name suffix, $4 = extra [library] line, $5 = URL base, $6 = asset options
    local base=${5:-$BASE} options=""
    [[ -n ${6:-} ]] && options="options = { $6 }\n"
    {
        printf '[library]\npath = "%s/lib"\n%s\n\n[scheduler]\nmax_concurrent = %d\nmax_per_host = %d\nretry_attempts = 1\n\n' "$2" "${4:-}" "$PARALLEL" "$PARALLEL"
        [[ $base == https:* ]] && printf '[[credentials]]\nmatch = "%s"\nca_file = "%s"\n\n' "$base" "$WORK/tls/ca.pem"
        printf '[[issues]]\nname = "bench"\ndate = "2025-01-01"\n\n'
        if [[ $1 == big ]]; then
            printf '[[issues.assets]]\nurl = "%s/big.bin"\n' "$base"
        else
            for file in "$WORK"/www/small/*; do printf "[[issues.assets]]\nurl = \"%s/small/%s\"\n$options" "$base" "${file##*/}"; done
        fi
    } > "$WORK/paperboy-$1${3:-}.toml"
}
paperboy_config big "$WORK/out"
paperboy_config small "$WORK/out"
paperboy_config big "$WORK/out" -nosync "sync_to_disk = false"
paperboy_config small "$WORK/out" -nosync "sync_to_disk = false"
# The small files through the local-file transport (file:// URLs, no network, no nginx, no
# libcurl): what the library itself costs per file (planning, bookkeeping, durability, delivery).
paperboy_config small "$WORK/out" -local "" "file://$WORK/www"
# The small files over HTTPS: HTTP/2 as paperboy chooses, and HTTP/1.1 forced.
paperboy_config small "$WORK/out" -tls "" "$TLS_BASE"
paperboy_config small "$WORK/out" -tls-h1 "" "$TLS_BASE" 'http_version = "1.1"'
paperboy_config small "$WORK/out" -tls-h2 "" "$TLS_BASE" 'http_version = "2"'
# The small files through a daemon: the daemon starts on the library-wide part (no issues: the
# sync adds them, as an app's command would), the sync finds it by the same [daemon] socket.
mkdir -p -m 700 "$WORK/run"
DAEMON_SOCKET=$WORK/run/paperboy.sock
printf '\n[daemon]\nsocket = "%s"\n' "$DAEMON_SOCKET" >> "$WORK/paperboy-small-daemon.toml.tail"
cat "$WORK/paperboy-small.toml" "$WORK/paperboy-small-daemon.toml.tail" > "$WORK/paperboy-small-daemon.toml"
sed '/^\[\[issues/,$d' "$WORK/paperboy-small.toml" | cat - "$WORK/paperboy-small-daemon.toml.tail" > "$WORK/paperboy-daemon-only.toml"
rm -f "$WORK/paperboy-small-daemon.toml.tail"

# start_daemon: a daemon on the small files' library (in out/, made afresh by `run`), once its
# socket answers; its PID in DAEMON_PID. stop_daemon: SIGTERM, and its CPU seconds in DAEMON_CPU.
start_daemon() {
    rm -f "$DAEMON_SOCKET"
    "$PAPERBOY" daemon --config "$WORK/paperboy-daemon-only.toml" > "$WORK/daemon.log" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 1 500); do
        [[ -S $DAEMON_SOCKET ]] && python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" "$DAEMON_SOCKET" 2> /dev/null && return 0
        kill -0 "$DAEMON_PID" 2> /dev/null || break
        sleep 0.01
    done
    echo "the daemon did not start:" >&2; tail -5 "$WORK/daemon.log" >&2; return 1
}
stop_daemon() {
    local ticks
    ticks=$(awk '{print $14 + $15}' "/proc/$DAEMON_PID/stat" 2> /dev/null || echo 0)
    DAEMON_CPU=$(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", t / hz}')
    kill "$DAEMON_PID" 2> /dev/null || true
    wait "$DAEMON_PID" 2> /dev/null || true
}

# run NAME CASE COMMAND… : runs in a fresh output folder; appends "seconds peak_kib" to a result file.
run() {
    local name=$1 case=$2; shift 2
    rm -rf "$WORK/out"; mkdir -p "$WORK/out"
    sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
    cat "$WORK/www/big.bin" > /dev/null 2>&1 || true   # same warm source for everyone
    # The tool's own code warm too, as for a tool that runs again and again (cold, paperboy's
    # start-up reads ~20 MiB of code from disk: +50-100 ms on this VM): one unmeasured run of the
    # same command for the small case, `--version` for the big one (its start-up is noise there).
    local daemon=0
    [[ $name == *-daemon ]] && daemon=1
    if [[ $case == small || $case == tls ]]; then
        rm -rf "$WORK/warm"; mkdir -p "$WORK/warm"
        if (( daemon )); then start_daemon || return 0; fi
        (cd "$WORK/warm" && "$@" > /dev/null 2>&1) || true
        if (( daemon )); then stop_daemon; fi
        # paperboy's library is in out/ (its config says so): start the measured run afresh.
        rm -rf "$WORK/warm" "$WORK/out"; mkdir -p "$WORK/out"; sync
    else
        "$1" --version > /dev/null 2>&1 || true
    fi
    DAEMON_CPU=0
    if (( daemon )); then start_daemon || return 0; fi
    if ! (cd "$WORK/out" && /usr/bin/time -f '%e %M %U %S' -o "$WORK/time.txt" "$@" > "$WORK/tool.log" 2>&1); then
        echo "$name ($case) failed:" >&2; tail -5 "$WORK/tool.log" >&2
        if (( daemon )); then stop_daemon; fi
        return 0
    fi
    if (( daemon )); then stop_daemon; fi
    local bytes
    bytes=$(find "$WORK/out" -type f \( -name '*.bin' -o -name 'f[0-9]*' \) -printf '%s\n' | awk '{s+=$1} END {print s+0}')
    # seconds, peak KiB (the command's), bytes, CPU seconds (user + system; the daemon's added)
    awk -v b="$bytes" -v d="$DAEMON_CPU" '{printf "%s %s %s %.2f\n", $1, $2, b, $3 + $4 + d}' "$WORK/time.txt" >> "$WORK/result-$case-$name.txt"
}

TOOLS_TLS=(${TLS_TOOLS:-paperboy paperboy-h1 "curl-Z$PARALLEL-h2" "curl-Z$PARALLEL-h1"})
TOOLS_BIG=(paperboy curl)
TOOLS_SMALL=(paperboy curl-seq "curl-Z$PARALLEL")
if [[ $LOCAL == 1 ]]; then TOOLS_SMALL+=(paperboy-local); fi
if [[ $OUTPUT == 1 ]]; then TOOLS_SMALL+=(paperboy-out); fi
if [[ $DAEMON == 1 ]]; then TOOLS_SMALL+=(paperboy-daemon); fi
if [[ $NOSYNC == 1 ]]; then TOOLS_BIG+=(paperboy-nosync); TOOLS_SMALL+=(paperboy-nosync); fi
if [[ -n ${BASELINE:-} ]]; then TOOLS_BIG+=(paperboy-base); TOOLS_SMALL+=(paperboy-base); fi
command -v wget > /dev/null && { TOOLS_BIG+=(wget); TOOLS_SMALL+=(wget); }
command -v aria2c > /dev/null && { TOOLS_BIG+=(aria2c); TOOLS_SMALL+=("aria2c-j$PARALLEL"); }
[[ -n $URLSESSION ]] && { TOOLS_BIG+=(urlsession); TOOLS_SMALL+=("urlsession-j$PARALLEL"); }
rm -f "$WORK"/result-*.txt

for ((i = 1; i <= RUNS; i++)); do
    echo "run $i of $RUNS…" >&2
    for tool in "${TOOLS_BIG[@]}"; do      # paired: every tool once per round
        [[ " $CASES " == *" big "* ]] || break
        case $tool in
            paperboy) run paperboy big "$PAPERBOY" sync -q --config "$WORK/paperboy-big.toml" ;;
            paperboy-nosync) run paperboy-nosync big "$PAPERBOY" sync -q --config "$WORK/paperboy-big-nosync.toml" ;;
            paperboy-base) run paperboy-base big "$BASELINE" sync -q --config "$WORK/paperboy-big.toml" ;;
            curl) run curl big curl -sS -o big.bin "$BASE/big.bin" ;;
            wget) run wget big wget -q -O big.bin "$BASE/big.bin" ;;
            aria2c) run aria2c big aria2c -q --file-allocation=none --allow-overwrite=true -o big.bin "$BASE/big.bin" ;;
            urlsession) run urlsession big env TMPDIR="$WORK/urlsession-tmp" "$URLSESSION" 1 "$WORK/big-url.txt" ;;
        esac
    done
    for tool in "${TOOLS_SMALL[@]}"; do
        [[ " $CASES " == *" small "* ]] || break
        case $tool in
            paperboy) run paperboy small "$PAPERBOY" sync -q --config "$WORK/paperboy-small.toml" ;;
            paperboy-nosync) run paperboy-nosync small "$PAPERBOY" sync -q --config "$WORK/paperboy-small-nosync.toml" ;;
            paperboy-out) run paperboy-out small "$PAPERBOY" sync --config "$WORK/paperboy-small.toml" ;;
            paperboy-local) run paperboy-local small "$PAPERBOY" sync -q --config "$WORK/paperboy-small-local.toml" ;;
            paperboy-daemon) run paperboy-daemon small "$PAPERBOY" sync -q --config "$WORK/paperboy-small-daemon.toml" ;;
            paperboy-base) run paperboy-base small "$BASELINE" sync -q --config "$WORK/paperboy-small.toml" ;;
            curl-seq) run "$tool" small curl -sS -K "$WORK/small-curl.txt" ;;
            curl-Z*) run "$tool" small curl -sS -Z --parallel-max "$PARALLEL" -K "$WORK/small-curl.txt" ;;
            wget) run wget small wget -q -i "$WORK/small-urls.txt" ;;
            aria2c-j*) run "$tool" small aria2c -q --file-allocation=none -j "$PARALLEL" -i "$WORK/small-urls.txt" ;;
            urlsession-j*) run "$tool" small env TMPDIR="$WORK/urlsession-tmp" "$URLSESSION" "$PARALLEL" "$WORK/small-urls.txt" ;;
        esac
    done
    for tool in "${TOOLS_TLS[@]}"; do
        [[ " $CASES " == *" tls "* ]] || break
        case $tool in
            paperboy) run paperboy tls "$PAPERBOY" sync -q --config "$WORK/paperboy-small-tls.toml" ;;
            paperboy-h1) run paperboy-h1 tls "$PAPERBOY" sync -q --config "$WORK/paperboy-small-tls-h1.toml" ;;
            paperboy-h2) run paperboy-h2 tls "$PAPERBOY" sync -q --config "$WORK/paperboy-small-tls-h2.toml" ;;
            curl-Z*-h2) run "$tool" tls curl -sS --cacert "$WORK/tls/ca.pem" --http2 -Z --parallel-max "$PARALLEL" -K "$WORK/small-curl-tls.txt" ;;
            curl-Z*-h1) run "$tool" tls curl -sS --cacert "$WORK/tls/ca.pem" --http1.1 -Z --parallel-max "$PARALLEL" -K "$WORK/small-curl-tls.txt" ;;
        esac
    done
done

# Medians of the runs, ratios against paperboy.
report() {  # $1 = case, $2 = unit
    local case=$1 unit=$2 base=""
    [[ -f $WORK/result-$case-paperboy.txt ]] || return 0
    printf '\n(%s) %s\n' "$case" "$([[ $case == big ]] && echo "one ${BIG_MB} MiB file" || echo "${SMALL_COUNT} files of ${SMALL_KB} KiB$([[ $case == tls ]] && echo " over HTTPS"), parallelism ${PARALLEL} where the tool has it")"
    printf '%-16s %9s %13s %10s %12s %10s %7s\n' tool seconds "(range)" "$unit" "vs paperboy" "peak RSS" "CPU-s"
    for file in "$WORK/result-$case-paperboy.txt" "$WORK"/result-"$case"-*.txt; do
        [[ -f $file ]] || continue
        local name=${file##*/result-$case-}; name=${name%.txt}
        [[ $name == paperboy && -n $base ]] && continue
        read -r seconds rss bytes < <(sort -n "$file" | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
        local cpu
        cpu=$(awk '{print $4}' "$file" | sort -n | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}')
        local range
        range=$(sort -n "$file" | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%s-%s", lo, hi}')
        local rate
        if [[ $case == big ]]; then
            rate=$(awk -v b="$bytes" -v s="$seconds" 'BEGIN {printf "%.0f", b / 1e6 / (s > 0 ? s : 0.001)}')
        else
            rate=$(awk -v n="$SMALL_COUNT" -v s="$seconds" 'BEGIN {printf "%.0f", n / (s > 0 ? s : 0.001)}')
        fi
        [[ -z $base ]] && base=$rate
        echo "$name $rate" >> "$WORK/rates-$case.txt"
        printf '%-16s %9s %13s %10s %11sx %6s MiB %7s\n' "$name" "$seconds" "($range)" "$rate" \
            "$(awk -v r="$rate" -v b="$base" 'BEGIN {printf "%.2f", r / b}')" "$(( rss / 1024 ))" "$cpu"
    done
}
ratio() {  # $1 = case, $2 = paperboy row, $3 = other tool, $4 = aim
    local mine theirs
    # A case left out has no rates file: awk's exit 2 must not end the script (set -e).
    mine=$(awk -v n="$2" '$1 == n {print $2}' "$WORK/rates-$1.txt" 2>/dev/null || true)
    theirs=$(awk -v n="$3" '$1 == n {print $2}' "$WORK/rates-$1.txt" 2>/dev/null || true)
    [[ -n $mine && -n $theirs ]] || return 0
    local aim="aim >= $4"
    [[ $4 == -* ]] && aim=${4#- }   # a row without an aim: its note
    printf '%s: %s / %s = %sx (%s)\n' "$1" "$2" "$3" "$(awk -v a="$mine" -v b="$theirs" 'BEGIN {printf "%.2f", a / b}')" "$aim"
}
rm -f "$WORK"/rates-*.txt
report big MB/s
report small files/s
report tls files/s
echo
ratio big paperboy curl 1.3
ratio big paperboy urlsession 2.5
ratio big paperboy-nosync curl 1.3
ratio small paperboy "curl-Z$PARALLEL" 1.0
ratio small paperboy-nosync "curl-Z$PARALLEL" 1.0
ratio small paperboy-out paperboy 0.95
ratio small paperboy-daemon paperboy "- no aim: through a daemon against in process"
ratio tls paperboy "curl-Z$PARALLEL-h2" 1.0
ratio tls paperboy-h1 "curl-Z$PARALLEL-h1" 1.0
ratio tls paperboy paperboy-h1 "1.0 (HTTP/2 against HTTP/1.1)"
echo
echo "file system of the downloads: $(df -T "$WORK" | awk 'NR==2 {print $2}') ($WORK), $RUNS paired runs, medians"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
