#!/usr/bin/env bash
# SFTP throughput on loopback: `paperboy sync` (release) vs `curl sftp://` (libssh2) vs OpenSSH
# `sftp` and `scp`, one file of SIZE MiB from an sshd started here (own host key, own config,
# stopped by PID). Wall time, MB/s, ratio to OpenSSH sftp, peak RSS; median of paired runs.
#
#   Benchmarks/sftp/run.sh [--size-mib 1024] [--runs 3] [--tmpfs]
#
# BASELINE=path adds a `paperboy-base` row: another paperboy binary (an earlier commit's) in the
# same paired rounds. Besides wall time, each row shows the tool's CPU seconds and sshd's (the
# server's share of the two cores: the client's requests decide how much work it does).
# NOSYNC=1 adds a `paperboy-nosync` row: `sync_to_disk = false` (paperboy makes files durable
# with fdatasync by default; the other tools do not sync).
# --tmpfs puts the source file and every tool's destination in /dev/shm instead of /var/tmp
# (ext4), to take the disk out of the comparison. The release build is Benchmarks/build.sh's
# (static Swift runtime; SCRATCH and PAPERBOY as described there).
# Tools run in turn within each round (paired runs); the median of each tool is printed, then
# every run, and the load average before and after.
#
# Needs root or a user sshd accepts keys for (it logs in as the current user), /usr/bin/time,
# openssh-server and curl with SFTP. Data is generated, never committed.
set -euo pipefail
# A relative BASELINE is the caller's: resolved before the `cd`.
if [[ -n ${BASELINE:-} ]]; then
    BASELINE=$(realpath -e "$BASELINE") && [[ -x $BASELINE ]] || { echo "BASELINE is not an executable file" >&2; exit 2; }
fi
cd "$(dirname "$0")/../.."

size_mib=1024
runs=3
parent=/var/tmp
while [[ $# -gt 0 ]]; do
    case "$1" in
        --size-mib) size_mib="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --tmpfs) parent=/dev/shm; shift ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
[[ -x /usr/sbin/sshd ]] || { echo "needs openssh-server" >&2; exit 2; }

bin=$(Benchmarks/build.sh)
work="$(mktemp -d "$parent/paperboy-sftp-bench.XXXXXX")"
chmod 755 "$work"
sshd_pid=""
cleanup() { [[ -n "$sshd_pid" ]] && kill "$sshd_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
ssh-keygen -q -t ed25519 -N "" -f "$work/host_key"
ssh-keygen -q -t ed25519 -N "" -f "$work/client_key"
cp "$work/client_key.pub" "$work/authorized_keys"
mkdir -p /run/sshd
cat > "$work/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
Subsystem sftp internal-sftp
EOF
/usr/sbin/sshd -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
sshd_pid=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.05; done
echo "[127.0.0.1]:$port $(cut -d' ' -f1,2 "$work/host_key.pub")" > "$work/known_hosts"

head -c "$((size_mib * 1024 * 1024))" /dev/urandom > "$work/big.bin"
user=$(id -un)
url="sftp://$user@127.0.0.1:$port$work/big.bin"
cat > "$work/paperboy.toml" <<EOF
[library]
path = "$work/lib"
[[credentials]]
match = "sftp://127.0.0.1:$port/"
private_key = "$work/client_key"
known_hosts = "$work/known_hosts"
[[issues]]
name = "big"
date = 2026-11-21
  [[issues.assets]]
  url = "$url"
EOF
ssh_options=(-o "UserKnownHostsFile=$work/known_hosts" -o StrictHostKeyChecking=yes -o BatchMode=yes -i "$work/client_key" -P "$port")

median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# CPU ticks (1/100 s) of sshd's finished children: the per-connection processes it has reaped.
server_ticks() { awk '{ print $16 + $17 }' "/proc/$sshd_pid/stat"; }
# Prints "seconds peak_KiB client_cpu_seconds server_cpu_seconds".
measure() {
    local before after
    before=$(server_ticks)
    /usr/bin/time -f "%e %M %U %S" -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || { cat "$work/stderr.txt" >&2; exit 1; }
    # Wait (at most 5 s) until sshd has reaped the connection's process: its CPU counts then.
    for _ in $(seq 100); do pgrep -P "$sshd_pid" > /dev/null || break; sleep 0.05; done
    after=$(server_ticks)
    awk -v server=$((after - before)) '{ printf "%s %s %.2f %.2f\n", $1, $2, $3 + $4, server / 100 }' "$work/time.txt"
}

run_paperboy() { rm -rf "$work/lib"; measure "$bin" sync -q --config "$work/paperboy.toml"; }
run_paperboy-base() { rm -rf "$work/lib"; measure "$BASELINE" sync -q --config "$work/paperboy.toml"; }
run_paperboy-nosync() { rm -rf "$work/lib"; measure "$bin" sync -q --config "$work/paperboy-nosync.toml"; }
run_curl() { measure curl -sS --key "$work/client_key" --pubkey "$work/client_key.pub" --hostpubsha256 "$(ssh-keygen -l -E sha256 -f "$work/host_key.pub" | awk '{print $2}' | sed 's/^SHA256://')" -o "$work/curl.bin" "$url"; }
run_sftp() { measure sftp -q "${ssh_options[@]}" "$user@127.0.0.1:$work/big.bin" "$work/sftp.bin"; }
run_scp() { measure scp -q "${ssh_options[@]}" "$user@127.0.0.1:$work/big.bin" "$work/scp.bin"; }

sed 's/^path = .*/&\nsync_to_disk = false/' "$work/paperboy.toml" > "$work/paperboy-nosync.toml"
tools=(paperboy curl sftp scp)
[[ ${NOSYNC:-0} == 1 ]] && tools=(paperboy paperboy-nosync curl sftp scp)
[[ -n ${BASELINE:-} ]] && tools=(paperboy paperboy-base "${tools[@]:1}")
for tool in "${tools[@]}"; do : > "$work/$tool.txt"; done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$runs"); do
    for tool in "${tools[@]}"; do
        "run_$tool" >> "$work/$tool.txt"
        rm -f "$work/curl.bin" "$work/sftp.bin" "$work/scp.bin"
        sync
    done
done

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for tool in "${tools[@]}"; do echo "$tool runs (seconds, KiB, CPU-s, sshd CPU-s): $(tr '\n' ';' < "$work/$tool.txt")"; done
base=$(cut -d' ' -f1 "$work/sftp.txt" | median)
printf '%-15s %8s %9s %10s %10s %10s %10s\n' tool seconds "MB/s" "time/sftp" "RSS MiB" "CPU-s" "sshd CPU-s"
for tool in "${tools[@]}"; do
    seconds=$(cut -d' ' -f1 "$work/$tool.txt" | median)
    rss=$(cut -d' ' -f2 "$work/$tool.txt" | median)
    cpu=$(cut -d' ' -f3 "$work/$tool.txt" | median)
    server=$(cut -d' ' -f4 "$work/$tool.txt" | median)
    awk -v t="$tool" -v s="$seconds" -v b="$base" -v r="$rss" -v m="$size_mib" -v c="$cpu" -v v="$server" \
        'BEGIN { printf "%-15s %8.2f %9.0f %10.2f %10.1f %10.2f %10.2f\n", t, s, m * 1048576 / s / 1e6, s / b, r / 1024, c, v }'
done
