#!/usr/bin/env python3
"""Bandwidth limiter accuracy, side by side (run by hand on a quiet machine, not by CI).

  Benchmarks/bandwidth/run.py [--mb 200] [--rate 20000000] [--runs 1]

nginx on loopback serves generated files.

(a) One download of MB megabytes limited to RATE bytes/s: paperboy sync (release,
    [bandwidth] limit) vs curl --limit-rate, wget --limit-rate and aria2c
    --max-overall-download-limit, all given the limit in bytes (to these tools "20M" means
    20 MiB/s). Each output file's size is sampled every 20 ms. Printed: the rate from the first
    to the last byte (process start-up and paperboy's final fsync and delivery are not the
    limiter's doing; the slope of a least-squares line through the samples, so that the size of
    a tool's writes does not bias it) as a ratio to RATE and as an error; and the worst 1-second
    window: every window of one second between samples, from the first byte to the last, its
    rate against RATE.
(b) Four concurrent downloads of MB/4 megabytes each under one global limit: paperboy and
    aria2c (-j4). Printed: the total rate's error, and Jain's fairness index of the four rates
    while all four run ((sum x)^2 / (n * sum x^2): 1 is perfectly fair, 0.25 one takes all).

Environment: PAPERBOY=path (a built paperboy; default Benchmarks/build.sh, the release build),
BASELINE=path (another paperboy binary, e.g. main's, run as "paperboy-base" in the same rounds).
The load average is printed before and after: other work on the machine shows in the windows.
"""
import argparse, os, shutil, signal, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
parser = argparse.ArgumentParser()
parser.add_argument("--mb", type=int, default=200)
parser.add_argument("--rate", type=int, default=20_000_000)
parser.add_argument("--runs", type=int, default=1)
args = parser.parse_args()
RATE, SIZE = args.rate, args.mb * 1_000_000

BASELINE = os.path.realpath(os.environ["BASELINE"]) if os.environ.get("BASELINE") else None
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


def load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def sampled(command, paths, cwd):
    """Runs command, sampling the sizes of the files paths() names; returns (elapsed, samples)."""
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


def span(samples, total):
    """The samples from the last one before the first byte to the first with all bytes."""
    points = [(t, sum(s)) for t, s in samples]
    first = next((i for i, (_, b) in enumerate(points) if b > 0), None)
    last = next((i for i, (_, b) in enumerate(points) if b >= total), len(points) - 1)
    if first is None:
        return []
    return points[max(first - 1, 0):last + 1]


def transfer_rate(samples, total):
    """Bytes per second from the first sample with data to the first with everything: the
    least-squares slope of bytes over time. (The difference between the two ends is biased by
    a tool's write size: at 1 MB/s one 512 KiB write is half a second.)"""
    points = [p for p in span(samples, total) if p[1] > 0]
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return float("nan")
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_b = sum(b for _, b in points) / n
    return (sum((t - mean_t) * (b - mean_b) for t, b in points)
            / sum((t - mean_t) ** 2 for t, _ in points))


def worst_window(samples, total):
    """Worst relative deviation from RATE over the 1-second windows of the transfer."""
    points = [p for p in span(samples, total) if p[1] > 0]
    worst = 0.0
    j = 0
    for i, (t0, b0) in enumerate(points):
        while j < len(points) and points[j][0] - t0 < 1.0:
            j += 1
        if j == len(points):
            break
        t1, b1 = points[j]
        worst = max(worst, abs((b1 - b0) / (t1 - t0) - RATE) / RATE)
    return worst


def jain(values):
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values)) if values and any(values) else float("nan")


def partials(lib):
    folder = os.path.join(lib, ".partial")
    def files():
        names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
        return [os.path.join(folder, n) for n in names] or [folder + "/none"]
    return files


def paperboys():
    found = [("paperboy", PAPERBOY)]
    if BASELINE:
        found.append(("paperboy-base", BASELINE))
    return found


print(f"paperboy: {PAPERBOY}" + (f"; baseline: {BASELINE}" if BASELINE else ""))
print(f"load average before: {load()} ({os.cpu_count()} cores)")
for run in range(1, args.runs + 1):
    print(f"== run {run}: (a) one {SIZE / 1e6:.0f} MB download at {RATE} B/s ==")
    print(f"{'tool':<14} {'seconds':>8} {'B/s':>12} {'ratio':>7} {'error':>8} {'worst 1 s':>10}")
    case = os.path.join(work, f"a{run}"); os.makedirs(case)
    tools = []
    for name, binary in paperboys():
        folder = os.path.join(case, name); os.makedirs(folder)
        with open(os.path.join(folder, "p.toml"), "w") as f:
            f.write(f'[library]\npath = "lib"\n[bandwidth]\nlimit = "{RATE}"\n[[issues]]\nname = "a"\ndate = 2026-11-21\n'
                    f'  [[issues.assets]]\n  url = "{base}/big.bin"\n')
        tools.append((name, [binary, "sync", "-q", "--config", "p.toml"], partials(os.path.join(folder, "lib")), folder))
    if shutil.which("curl"):
        tools.append(("curl", ["curl", "-s", "--limit-rate", str(RATE), "-o", "curl.out", f"{base}/big.bin"],
                      lambda: [os.path.join(case, "curl.out")], case))
    if shutil.which("wget"):
        tools.append(("wget", ["wget", "-q", f"--limit-rate={RATE}", "-O", "wget.out", f"{base}/big.bin"],
                      lambda: [os.path.join(case, "wget.out")], case))
    if shutil.which("aria2c"):
        tools.append(("aria2c", ["aria2c", "-q", "--file-allocation=none", f"--max-overall-download-limit={RATE}",
                                 "-o", "aria2c.out", f"{base}/big.bin"], lambda: [os.path.join(case, "aria2c.out")], case))
    for name, command, paths, cwd in tools:
        elapsed, samples = sampled(command, paths, cwd)
        rate = transfer_rate(samples, SIZE)
        print(f"{name:<14} {elapsed:8.2f} {rate:12.0f} {rate / RATE:7.4f} {100 * (rate - RATE) / RATE:+7.2f}% "
              f"{100 * worst_window(samples, SIZE):9.2f}%", flush=True)

    print(f"== run {run}: (b) four downloads of {SIZE / 4e6:.0f} MB under one {RATE} B/s limit ==")
    print(f"{'tool':<14} {'seconds':>8} {'total B/s':>12} {'ratio':>7} {'error':>8} {'Jain':>7}   per-transfer B/s while all four run")
    case = os.path.join(work, f"b{run}"); os.makedirs(case)

    def partials_and_delivered(lib):
        """The four partial files while they exist, then the delivered ones."""
        running = partials(lib)
        def files():
            found = [p for p in running() if not p.endswith("/none")]
            delivered = [os.path.join(lib, "Issues", "b", f"part{i}.bin") for i in range(4)]
            return found + [p for p in delivered if os.path.exists(p)]
        return files

    four = []
    for name, binary in paperboys():
        folder = os.path.join(case, name); os.makedirs(folder)
        with open(os.path.join(folder, "p.toml"), "w") as f:
            f.write(f'[library]\npath = "lib"\n[scheduler]\nmax_concurrent = 4\nmax_per_host = 4\n[bandwidth]\nlimit = "{RATE}"\n'
                    '[[issues]]\nname = "b"\ndate = 2026-11-21\n')
            for i in range(4):
                f.write(f'  [[issues.assets]]\n  url = "{base}/part{i}.bin"\n  path = "part{i}.bin"\n')
        four.append((name, [binary, "sync", "-q", "--config", "p.toml"], partials_and_delivered(os.path.join(folder, "lib")), folder))
    if shutil.which("aria2c"):
        with open(os.path.join(case, "list.txt"), "w") as f:
            for i in range(4):
                f.write(f"{base}/part{i}.bin\n  out=aria{i}.out\n")
        four.append(("aria2c", ["aria2c", "-q", "-j4", "--file-allocation=none", f"--max-overall-download-limit={RATE}", "-i", "list.txt"],
                     lambda: [os.path.join(case, f"aria{i}.out") for i in range(4)], case))
    for name, command, paths, cwd in four:
        elapsed, samples = sampled(command, paths, cwd)
        # Each transfer's rate from the first sample where all four have bytes to the last where
        # none is complete: the part of the run where they compete.
        both = [(t, s[:4]) for t, s in samples if len(s) >= 4 and all(0 < b < SIZE // 4 for b in s[:4])]
        rates = []
        if len(both) >= 2 and both[-1][0] > both[0][0]:
            (t0, s0), (t1, s1) = both[0], both[-1]
            rates = [(b1 - b0) / (t1 - t0) for b0, b1 in zip(s0, s1)]
        total = transfer_rate(samples, SIZE)
        print(f"{name:<14} {elapsed:8.2f} {total:12.0f} {total / RATE:7.4f} {100 * (total - RATE) / RATE:+7.2f}% "
              f"{jain(rates):7.4f}   {' '.join(f'{r:.0f}' for r in rates)}", flush=True)
print(f"load average after: {load()}")

nginx.send_signal(signal.SIGQUIT); nginx.wait()
shutil.rmtree(work, ignore_errors=True)
