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
Needs nginx and curl.
"""
import os, random, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RATE = os.environ.get("RATE", "50m")
KILLS = int(os.environ.get("KILLS", "10"))
SIZE_MB = int(os.environ.get("SIZE_MB", "1000"))
SEED = int(os.environ.get("SEED", "1"))
MIN_S, MAX_S = float(os.environ.get("MIN_S", "0.6")), float(os.environ.get("MAX_S", "1.4"))
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


def kill_runs(name, command, path, delays, env=None):
    for delay in delays:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
    # One more run, killed too: its Range says where the last killed run's bytes ended.
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    time.sleep(0.5)
    process.send_signal(signal.SIGKILL)
    process.wait()
    time.sleep(0.3)  # nginx logs a request once it notices the closed connection
    served = log_lines(path)
    waste = [s + b - served[i + 1][0] for i, (s, b) in enumerate(served[:-1])]
    return name, waste


def main():
    paperboy = os.environ.get("PAPERBOY") or subprocess.run(
        [f"{ROOT}/Benchmarks/build.sh"], check=True, capture_output=True, text=True).stdout.strip()
    data = f"{WORK}/www"
    os.makedirs(data, exist_ok=True)
    with open(f"{data}/big.bin", "wb") as f:
        for _ in range(SIZE_MB):
            f.write(os.urandom(1 << 20))
    tools = [("paperboy", paperboy)]
    if os.environ.get("BASELINE"):
        tools.append(("paperboy-base", os.path.realpath(os.environ["BASELINE"])))
    names = [name for name, _ in tools] + ["curl -C -"]
    for name in names:
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
        results.append(kill_runs("curl -C -", ["curl", "-s", "-C", "-", "-o", f"{WORK}/curl.out",
                                               f"http://127.0.0.1:{port}/curl.bin"], "/curl.bin", delays))
    finally:
        with open(f"{WORK}/nginx/nginx.pid") as f:
            os.kill(int(f.read()), signal.SIGTERM)
    print(f"Re-transfer per kill: {KILLS} SIGKILLs at {MIN_S}-{MAX_S} s (seed {SEED}), nginx limit_rate {RATE} on loopback")
    print(f"{'tool':<15} {'kills':>5} {'mean MB':>8} {'median MB':>9} {'max MB':>7}")
    means = {}
    for name, waste in results:
        means[name] = statistics.mean(waste)
        print(f"{name:<15} {len(waste):>5} {means[name] / 1e6:>8.2f} {statistics.median(waste) / 1e6:>9.2f} {max(waste) / 1e6:>7.2f}")
        print(f"{'':<15} per kill (bytes): {waste}")
    if means.get("curl -C -"):
        for name in names[:-1]:
            print(f"{name} / curl -C -: {means[name] / means['curl -C -']:.2f}")
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
