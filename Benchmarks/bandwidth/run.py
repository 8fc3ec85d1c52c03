#!/usr/bin/env python3
"""Bandwidth limiter accuracy, side by side (run by hand, not by CI).

  Benchmarks/bandwidth/run.py [--mb 200] [--rate 20000000]

nginx on loopback serves generated files. (a) One download of MB megabytes limited to RATE
bytes/s: paperboy sync (release, [bandwidth] limit) vs curl --limit-rate, wget --limit-rate and
aria2c --max-overall-download-limit (byte counts: to these tools "20M" means 20 MiB/s). Each
output file's size is sampled every 100 ms: achieved rate over the run, its error, and the worst
1-second window after the first second. (b) Four concurrent downloads under one global limit:
paperboy and aria2c (-j4): total rate and slowest/fastest.
"""
import argparse, os, shutil, signal, socket, subprocess, sys, tempfile, threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
parser = argparse.ArgumentParser()
parser.add_argument("--mb", type=int, default=200)
parser.add_argument("--rate", type=int, default=20_000_000)
args = parser.parse_args()
RATE, SIZE = args.rate, args.mb * 1_000_000

# The release build every benchmark uses (static Swift runtime; PAPERBOY=path skips it).
PAPERBOY = subprocess.run([os.path.join(ROOT, "Benchmarks", "build.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
work = tempfile.mkdtemp(prefix="paperboy-bw-", dir="/var/tmp")
www = os.path.join(work, "www"); os.makedirs(www)
for name, size in [("big.bin", SIZE)] + [(f"part{i}.bin", SIZE // 4) for i in range(4)]:
    with open(os.path.join(www, name), "wb") as f:
        f.write(os.urandom(size))
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]; sock.close()
os.makedirs(os.path.join(work, "tmp"))
conf = os.path.join(work, "nginx.conf")
with open(conf, "w") as f:
    f.write(f"""{'user root;' if os.getuid() == 0 else ''}
worker_processes 2; daemon off; pid {work}/nginx.pid; error_log {work}/error.log warn;
events {{ worker_connections 256; }}
http {{ access_log off; client_body_temp_path {work}/tmp; proxy_temp_path {work}/tmp; fastcgi_temp_path {work}/tmp;
uwsgi_temp_path {work}/tmp; scgi_temp_path {work}/tmp;
server {{ listen 127.0.0.1:{port}; root {www}; }} }}
""")
nginx = subprocess.Popen([shutil.which("nginx") or "/usr/sbin/nginx", "-c", conf, "-p", work])
time.sleep(0.5)
base = f"http://127.0.0.1:{port}"

def sampled(command, paths, cwd):
    """Runs command, sampling the total size of the files matching paths(); returns samples."""
    samples = []
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while process.poll() is None:
        sizes = []
        for path in paths():
            try:
                sizes.append(os.path.getsize(path))
            except OSError:
                sizes.append(0)
        samples.append((time.monotonic() - start, sizes))
        time.sleep(0.02)
    elapsed = time.monotonic() - start
    if process.returncode != 0:
        print(f"  {command[0]} exited with {process.returncode}", file=sys.stderr)
    return elapsed, samples

def transfer_rate(samples, total):
    """Bytes per second between the first sample with data and the first with everything:
    process start-up and the final sync and delivery are not the limiter's doing."""
    points = [(t, sum(s)) for t, s in samples]
    first = next(((t, b) for t, b in points if b > 0), None)
    last = next(((t, b) for t, b in points if b >= total), points[-1] if points else None)
    if not first or not last or last[0] <= first[0]:
        return float("nan")
    return (last[1] - first[1]) / (last[0] - first[0])

def windows(samples, index=None):
    """Worst relative deviation from RATE over 1-second windows after the first second."""
    worst = 0.0
    points = [(t, sum(s) if index is None else s[index]) for t, s in samples]
    for i, (t0, b0) in enumerate(points):
        if t0 < 1.0:
            continue
        for t1, b1 in points[i:]:
            if t1 - t0 >= 1.0:
                if b1 >= SIZE * 0.999:   # the end of the run is not a window
                    return worst
                worst = max(worst, abs((b1 - b0) / (t1 - t0) - RATE) / RATE)
                break
    return worst

def partials(lib):
    folder = os.path.join(lib, ".partial")
    def files():
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        return [os.path.join(folder, n) for n in names] or [folder + "/none"]
    return files

print(f"== (a) one {SIZE / 1e6:.0f} MB download at {RATE} B/s ==")
print(f"{'tool':<10} {'seconds':>8} {'B/s':>12} {'error':>8} {'worst 1 s':>10}   (B/s measured from first to last byte)")
results = {}
case = os.path.join(work, "a"); os.makedirs(case)
with open(os.path.join(case, "p.toml"), "w") as f:
    f.write(f'[library]\npath = "lib"\n[bandwidth]\nlimit = "{RATE}"\n[[issues]]\nname = "a"\ndate = 2026-11-21\n'
            f'  [[issues.assets]]\n  url = "{base}/big.bin"\n')
tools = [("paperboy", [PAPERBOY, "sync", "-q", "--config", "p.toml"], partials(os.path.join(case, "lib")))]
if shutil.which("curl"):
    tools.append(("curl", ["curl", "-s", "--limit-rate", str(RATE), "-o", "curl.out", f"{base}/big.bin"], lambda: [os.path.join(case, "curl.out")]))
if shutil.which("wget"):
    tools.append(("wget", ["wget", "-q", f"--limit-rate={RATE}", "-O", "wget.out", f"{base}/big.bin"], lambda: [os.path.join(case, "wget.out")]))
if shutil.which("aria2c"):
    tools.append(("aria2c", ["aria2c", "-q", "--file-allocation=none", f"--max-overall-download-limit={RATE}", "-o", "aria2c.out", f"{base}/big.bin"],
                  lambda: [os.path.join(case, "aria2c.out")]))
for name, command, paths in tools:
    elapsed, samples = sampled(command, paths, case)
    rate = transfer_rate(samples, SIZE)
    results[name] = rate
    print(f"{name:<10} {elapsed:8.2f} {rate:12.0f} {100 * (rate - RATE) / RATE:+7.2f}% {100 * windows(samples):9.2f}%")

print(f"== (b) four downloads of {SIZE / 4e6:.0f} MB under one {RATE} B/s limit ==")
print(f"{'tool':<10} {'seconds':>8} {'total B/s':>12} {'error':>8} {'slowest/fastest':>16}")
case = os.path.join(work, "b"); os.makedirs(case)
with open(os.path.join(case, "p.toml"), "w") as f:
    f.write(f'[library]\npath = "lib"\n[scheduler]\nmax_concurrent = 4\nmax_per_host = 4\n[bandwidth]\nlimit = "{RATE}"\n'
            '[[issues]]\nname = "b"\ndate = 2026-11-21\n')
    for i in range(4):
        f.write(f'  [[issues.assets]]\n  url = "{base}/part{i}.bin"\n  path = "part{i}.bin"\n')
def partials_and_delivered(lib):
    """The four partial files while they exist, then the delivered ones (each file counted once)."""
    running = partials(lib)
    def files():
        found = [p for p in running() if not p.endswith("/none")]
        delivered = [os.path.join(lib, "Issues", "b", f"part{i}.bin") for i in range(4)]
        return found + [p for p in delivered if os.path.exists(p)]
    return files

four = [("paperboy", [PAPERBOY, "sync", "-q", "--config", "p.toml"], partials_and_delivered(os.path.join(case, "lib")))]
if shutil.which("aria2c"):
    with open(os.path.join(case, "list.txt"), "w") as f:
        for i in range(4):
            f.write(f"{base}/part{i}.bin\n  out=aria{i}.out\n")
    four.append(("aria2c", ["aria2c", "-q", "-j4", "--file-allocation=none", f"--max-overall-download-limit={RATE}", "-i", "list.txt"],
                 lambda: [os.path.join(case, f"aria{i}.out") for i in range(4)]))
for name, command, paths in four:
    elapsed, samples = sampled(command, paths, case)
    # Per-transfer rate while all four run: bytes of each at the last sample where none was done.
    running = [s for s in samples if len(s[1]) == 4 and all(0 < b < SIZE // 4 for b in s[1])]
    running = [(t, sizes[:4]) for t, sizes in running]
    spread = float("nan")
    if running:
        t, sizes = running[-1]
        spread = min(sizes) / max(sizes)
    total = transfer_rate(samples, SIZE)
    print(f"{name:<10} {elapsed:8.2f} {total:12.0f} {100 * (total - RATE) / RATE:+7.2f}% {spread:16.3f}")

nginx.send_signal(signal.SIGQUIT); nginx.wait()
shutil.rmtree(work, ignore_errors=True)
