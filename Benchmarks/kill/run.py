#!/usr/bin/env python3
"""Re-transfer per kill: SIGKILL `paperboy sync` and `curl -C -` ten times each during a
rate-limited download from one nginx on loopback, and measure at the server (nginx's
$body_bytes_sent and the Range each run asks for) how many bytes were sent twice per kill.

    waste of kill i = start_i + body_bytes_sent_i - start_(i+1)

Then (SPLIT=4, 0 to leave out) the same kills during a split download: `connections_per_asset
= SPLIT`, SPLIT_KILLS=5 SIGKILLs, then a run left to finish, whose file must be byte-identical
to the source. Per kill, from the log lines of that run (nginx's limit is per connection):

    received of run i    = the bytes A..A+sent of each of its requests (`bytes=A-B`, `bytes=A-`,
                           or none: from 0), joined
    re-fetched of kill i = the bytes received in run i that a later run received again
    pieces in flight     = what the requests of run i asked for: the whole range of each
                           piece request (`bytes=A-B`), and what was sent of the request that
                           began (`bytes=N-`, the prefix's own connection)

The aim (issue 30): re-fetched <= pieces in flight at every kill; resuming piece by piece, at
most what the connections received since the last checkpoint (connections x rate x
checkpoint_interval, plus the sockets' buffers).

Run by hand, on a quiet machine:  Benchmarks/kill/run.py
Knobs (environment): RATE=50m (nginx limit_rate) KILLS=10 SIZE_MB=1000 SEED=1 SPLIT=4 SPLIT_KILLS=5
  MIRROR=1              (the split download also names a mirror, the same nginx on 127.0.0.2:
                         issue 30's "kill -9 x 5 during a 2-mirror download"; its requests are
                         counted with the url's, per byte of the file)
  MIN_S=0.6 MAX_S=1.4   (each run is killed after a random time in this range, the same
                         sequence for every tool)
  WORK=/var/tmp/...     (where data and downloads live; default a new folder in /var/tmp)
  PAPERBOY=path         (a built paperboy; default: Benchmarks/build.sh, a release build)
  BASELINE=path         (another paperboy, e.g. an earlier commit's, measured as "paperboy-base")
  CURL=path             (the curl to compare with)
  HEAVY_MB=16 HEAVY_THREADS=8  (the same curl is run again with a preloaded library that touches
                         this much memory and starts this many idle threads, so that it takes
                         as long as paperboy to be torn down after SIGKILL; needs a C compiler)
Needs nginx and curl.
"""
import os, random, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE = os.environ.get("RATE", "50m")
KILLS = int(os.environ.get("KILLS", "10"))
SIZE_MB = int(os.environ.get("SIZE_MB", "1000"))
SEED = int(os.environ.get("SEED", "1"))
MIN_S, MAX_S = float(os.environ.get("MIN_S", "0.6")), float(os.environ.get("MAX_S", "1.4"))
HEAVY_MB, HEAVY_THREADS = os.environ.get("HEAVY_MB", "16"), os.environ.get("HEAVY_THREADS", "8")
HEAVY_NAME = f"curl -C - +{HEAVY_MB} MiB {HEAVY_THREADS} thr"
SPLIT = int(os.environ.get("SPLIT", "4"))
SPLIT_KILLS = int(os.environ.get("SPLIT_KILLS", "5"))
MIRROR = os.environ.get("MIRROR") == "1"
WORK = os.environ.get("WORK") or tempfile.mkdtemp(prefix="paperboy-kill-bench.", dir="/var/tmp")
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nginx(root, port):
    os.makedirs(f"{WORK}/nginx/logs", exist_ok=True)
    conf = f"{WORK}/nginx/nginx.conf"
    with open(conf, "w") as f:
        f.write(f"""
user root;
worker_processes 1;
pid {WORK}/nginx/nginx.pid;
error_log {WORK}/nginx/logs/error.log;
events {{ worker_connections 64; }}
http {{
    log_format ranges '$uri "$http_range" $body_bytes_sent';
    access_log {WORK}/nginx/logs/access.log ranges;
    client_body_temp_path {WORK}/nginx/tmp; proxy_temp_path {WORK}/nginx/tmp;
    fastcgi_temp_path {WORK}/nginx/tmp; uwsgi_temp_path {WORK}/nginx/tmp; scgi_temp_path {WORK}/nginx/tmp;
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.2:{port};
        root {root};
        location / {{ limit_rate {RATE}; }}
    }}
}}
""")
    subprocess.run([NGINX, "-c", conf, "-p", f"{WORK}/nginx", "-e", f"{WORK}/nginx/logs/error.log"], check=True)
    time.sleep(0.3)


def log_requests(path):
    """(range as asked, bytes sent) of every logged request for path, in the order logged."""
    try:
        with open(f"{WORK}/nginx/logs/access.log") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    found = []
    for line in lines:
        m = re.match(r'(\S+) "([^"]*)" (\d+)', line)
        if m and m.group(1) == path:
            found.append((m.group(2), int(m.group(3))))
    return found


def split_kill_runs(binary, folder, port, delays, size):
    """SPLIT_KILLS killed runs of a split download, then one left to finish: per kill
    (re-fetched, pieces in flight), and whether the delivered file equals the source."""
    name = f"split{SPLIT}"
    os.symlink("big.bin", f"{WORK}/www/{name}.bin")
    os.makedirs(folder, exist_ok=True)
    mirrors = f'  mirrors = ["http://127.0.0.2:{port}/{name}.bin"]\n' if MIRROR else ""
    with open(f"{folder}/paperboy.toml", "w") as f:
        f.write(f"""[library]
path = "{folder}/lib"
[scheduler]
connections_per_asset = {SPLIT}
[[issues]]
name = "kill"
date = 2026-11-21
  [[issues.assets]]
  url = "http://127.0.0.1:{port}/{name}.bin"
  path = "big.bin"
{mirrors}""")
    command = [binary, "sync", "-q", "--config", f"{folder}/paperboy.toml"]
    ends = []
    for delay in delays:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        time.sleep(0.5)  # nginx logs a request once it notices the closed connection
        ends.append(len(log_requests(f"/{name}.bin")))
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    requests = log_requests(f"/{name}.bin")
    runs = [requests[a:b] for a, b in zip([0] + ends, ends + [len(requests)])]

    def received(run):
        # Joined ranges [start, end) of the bytes the run's requests were sent.
        spans = sorted((int(asked[6:].partition("-")[0]) if asked.startswith("bytes=") else 0, bytes_sent)
                       for asked, bytes_sent in run)
        joined = []
        for start, count in spans:
            if joined and start <= joined[-1][1]:
                joined[-1][1] = max(joined[-1][1], start + count)
            else:
                joined.append([start, start + count])
        return joined

    def overlap(a, b):
        return sum(max(0, min(x1, y1) - max(x0, y0)) for x0, x1 in a for y0, y1 in b)
    kills = []
    for i in range(len(delays)):
        later = received([entry for run in runs[i + 1:] for entry in run])
        refetched = overlap(received(runs[i]), later)
        flight = others = 0
        for asked, bytes_sent in runs[i]:
            a, _, b = asked[6:].partition("-") if asked.startswith("bytes=") else ("0", "", "")
            flight += int(b) - int(a) + 1 if b else bytes_sent
            others += bytes_sent if b else 0
        kills.append((refetched, flight, len(runs[i]), others))
    delivered = f"{folder}/lib/Issues/kill/big.bin"
    same = finished.returncode == 0 and os.path.exists(delivered) and \
        subprocess.run(["cmp", "-s", delivered, f"{WORK}/www/big.bin"]).returncode == 0
    total = sum(b for _, b in requests)
    return kills, same, finished.returncode, total - size


def log_lines(path):
    try:
        with open(f"{WORK}/nginx/logs/access.log") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        m = re.match(r'(\S+) "([^"]*)" (\d+)', line)
        if m and m.group(1) == path:
            start = int(m.group(2)[6:].split("-")[0]) if m.group(2).startswith("bytes=") else 0
            out.append((start, int(m.group(3))))
    return out


HEAVY_C = r'''
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
static void *sleeper(void *unused) { (void)unused; for (;;) pause(); return 0; }
__attribute__((constructor)) static void heavy(void) {
    static char *volatile memory;
    size_t size = (size_t)atoi(getenv("HEAVY_MB")) << 20;
    memory = malloc(size);
    for (size_t i = 0; i < size; i += 4096) memory[i] = 1;
    for (int i = atoi(getenv("HEAVY_THREADS")); i > 0; i--) { pthread_t t; pthread_create(&t, 0, sleeper, 0); }
}
'''


def heavy_preload():
    """A preload library giving curl paperboy's weight at exit (touched memory, idle threads), or
    None without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        return None
    with open(f"{WORK}/heavy.c", "w") as f:
        f.write(HEAVY_C)
    built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", f"{WORK}/heavy.so", f"{WORK}/heavy.c", "-lpthread"])
    return f"{WORK}/heavy.so" if built.returncode == 0 else None


def kill_runs(name, command, path, delays, env=None):
    exits = []
    for delay in delays:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(delay)
        killed = time.perf_counter()
        process.send_signal(signal.SIGKILL)
        process.wait()
        exits.append((time.perf_counter() - killed) * 1000)
    # One more run, killed too: its Range says where the last killed run's bytes ended.
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.3)  # nginx logs a request once it notices the closed connection
    served = log_lines(path)
    waste = [s + b - served[i + 1][0] for i, (s, b) in enumerate(served[:-1])]
    if os.environ.get("VERBOSE"):
        print(f"{name}: served (range start, bytes sent): {served}", file=sys.stderr)
    return name, waste, statistics.median(exits)


def main():
    paperboy = os.environ.get("PAPERBOY") or subprocess.run(
        [f"{ROOT}/Benchmarks/build.sh"], check=True, capture_output=True, text=True).stdout.strip()
    data = f"{WORK}/www"
    os.makedirs(data, exist_ok=True)
    with open(f"{data}/big.bin", "wb") as f:
        for _ in range(SIZE_MB):
            f.write(os.urandom(1 << 20))
    tools = [("paperboy", paperboy)]
    for index, baseline in enumerate(filter(None, os.environ.get("BASELINE", "").split(","))):
        tools.append((f"paperboy-base{index + 1 if index else ''}", os.path.realpath(baseline)))
    names = [name for name, _ in tools] + ["curl -C -"]
    for name in names + ["curl-heavy"]:
        os.symlink("big.bin", f"{data}/{name.split()[0]}.bin")
    port = free_port()
    start_nginx(data, port)
    rng = random.Random(SEED)
    delays = [rng.uniform(MIN_S, MAX_S) for _ in range(KILLS)]
    results = []
    try:
        for name, binary in tools:
            folder = f"{WORK}/{name}"
            os.makedirs(folder, exist_ok=True)
            with open(f"{folder}/paperboy.toml", "w") as f:
                f.write(f"""[library]
path = "{folder}/lib"
[[issues]]
name = "kill"
date = 2026-11-21
  [[issues.assets]]
  url = "http://127.0.0.1:{port}/{name}.bin"
  path = "big.bin"
""")
            results.append(kill_runs(name, [binary, "sync", "-q", "--config", f"{folder}/paperboy.toml"], f"/{name}.bin", delays))
        curl = os.environ.get("CURL", "curl")
        results.append(kill_runs("curl -C -", [curl, "-s", "-C", "-", "-o", f"{WORK}/curl.out",
                                               f"http://127.0.0.1:{port}/curl.bin"], "/curl.bin", delays))
        # The same curl made as heavy as paperboy at exit: the kernel keeps accepting bytes on
        # the socket until the killed process is torn down, so a bigger process loses more.
        preload = heavy_preload()
        if preload:
            env = dict(os.environ, LD_PRELOAD=preload, HEAVY_MB=HEAVY_MB, HEAVY_THREADS=HEAVY_THREADS)
            results.append(kill_runs(HEAVY_NAME, [curl, "-s", "-C", "-", "-o", f"{WORK}/curl-heavy.out",
                                                 f"http://127.0.0.1:{port}/curl-heavy.bin"], "/curl-heavy.bin", delays, env))
        split = None
        if SPLIT > 1:
            split = split_kill_runs(paperboy, f"{WORK}/split", port, delays[:SPLIT_KILLS], SIZE_MB << 20)
    finally:
        with open(f"{WORK}/nginx/nginx.pid") as f:
            os.kill(int(f.read()), signal.SIGTERM)
    print(f"Re-transfer per kill: {KILLS} SIGKILLs at {MIN_S}-{MAX_S} s (seed {SEED}), nginx limit_rate {RATE} on loopback")
    print(f"{'tool':<28} {'kills':>5} {'mean MB':>8} {'median MB':>9} {'max MB':>7} {'exit ms':>8}")
    means = {}
    for name, waste, exit_ms in results:
        means[name] = statistics.mean(waste)
        print(f"{name:<28} {len(waste):>5} {means[name] / 1e6:>8.2f} {statistics.median(waste) / 1e6:>9.2f} "
              f"{max(waste) / 1e6:>7.2f} {exit_ms:>8.2f}")
        print(f"{'':<28} per kill (bytes): {waste}")
    print("exit ms: median time from SIGKILL to the process being reaped")
    for baseline in ("curl -C -", HEAVY_NAME):
        if means.get(baseline):
            for name in names[:-1]:
                print(f"{name} / {baseline}: {means[name] / means[baseline]:.2f}")
    if split:
        kills, same, status, extra = split
        print(f"\nSplit download, connections_per_asset = {SPLIT}{', with a mirror (127.0.0.2)' if MIRROR else ''}: "
              f"{len(kills)} SIGKILLs at the same times, then a run to the end")
        print(f"{'kill':>4} {'requests':>8} {'re-fetched MB':>13} {'in flight MB':>12} {'pieces sent MB':>14}  aim: re-fetched <= in flight")
        for i, (refetched, flight, count, others) in enumerate(kills, 1):
            print(f"{i:>4} {count:>8} {refetched / 1e6:>13.2f} {flight / 1e6:>12.2f} {others / 1e6:>14.2f}  "
                  f"{'met' if refetched <= flight else 'NOT MET'}")
        print("pieces sent: what the piece requests (`bytes=A-B`, not the prefix's own) had received when killed")
        print(f"last run exit {status}; delivered file byte-identical to the source: {same}; "
              f"bytes served beyond the file's size over all runs: {extra / 1e6:.2f} MB")
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
