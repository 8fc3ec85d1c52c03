#!/usr/bin/env python3
"""Re-transfer per kill: SIGKILL `paperboy sync` and `curl -C -` ten times each during a
rate-limited download from one nginx on loopback, and measure at the server (nginx's
$body_bytes_sent and the Range each run asks for) how many bytes were sent twice per kill.

    waste of kill i = start_i + body_bytes_sent_i - start_(i+1)

Run by hand, on a quiet machine:  Benchmarks/kill/run.py
Knobs (environment): RATE=50m (nginx limit_rate) KILLS=10 SIZE_MB=1000 SEED=1
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
        root {root};
        location / {{ limit_rate {RATE}; }}
    }}
}}
""")
    subprocess.run([NGINX, "-c", conf, "-p", f"{WORK}/nginx", "-e", f"{WORK}/nginx/logs/error.log"], check=True)
    time.sleep(0.3)


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
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
