#!/usr/bin/env python3
"""Bandwidth limiter accuracy, side by side (run by hand on a quiet machine, not by CI).

  Benchmarks/bandwidth/run.py [--mb 200] [--rate 20000000] [--runs 1] [--cases abf]

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
(f) Two downloads of MB/2 megabytes under one limit, `connections_per_asset = 4`: one from a
    location serving ranges (split over four connections), one from a location that serves none
    (`max_ranges 0`: one connection). Printed: each one's share of the bytes moved while both
    run (the partial files' allocated blocks: a split file is written at several places, so its
    size says nothing) and Jain's index. Aim (issue 30): each share within 45-55 %: the limiter
    counts an asset once, not per connection.

With --daemon, instead: `paperboy daemon` serving clients over its socket (the tests check the
same promises without measuring: DaemonSharedLimitTests on a test clock, DaemonBandwidthTests).
(c) Two clients, each on its own connection, each downloading one MB-megabyte file under one
    RATE limit. Printed: the total rate (least-squares slope of both partial files' bytes over
    the middle of the run, from 2 MB each to the first end) against RATE, each client's share of
    the bytes moved in that window, and Jain's index of the two.
(d) SIGHUP with a new limit while one transfer runs: RATE to RATE/5 (the rate over 2 s before,
    then over 4 s from the log's "reloaded"), and RATE/200 to RATE (the time from SIGHUP until
    the transfer has moved 1 MB more).
(e) SIGTERM to exit: the time from the signal until the process is reaped, and its exit
    status, for a daemon running a transfer and for an idle one.

Environment: PAPERBOY=path (a built paperboy; default Benchmarks/build.sh, the release build),
BASELINE=path (another paperboy binary, e.g. main's, run as "paperboy-base" in the same rounds).
The load average is printed before and after: other work on the machine shows in the windows.
"""
import argparse, json, os, shutil, signal, socket, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
parser = argparse.ArgumentParser()
parser.add_argument("--mb", type=int, default=200)
parser.add_argument("--rate", type=int, default=20_000_000)
parser.add_argument("--runs", type=int, default=1)
parser.add_argument("--cases", default="abf", help="which of (a), (b) and (f) to run, such as 'f'")
parser.add_argument("--daemon", action="store_true", help="the daemon's shared limit, SIGHUP and SIGTERM instead")
args = parser.parse_args()
RATE, SIZE = args.rate, args.mb * 1_000_000

BASELINE = os.path.realpath(os.environ["BASELINE"]) if os.environ.get("BASELINE") else None
# The release build every benchmark uses (static Swift runtime; PAPERBOY=path skips it).
PAPERBOY = subprocess.run([os.path.join(ROOT, "Benchmarks", "build.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
work = tempfile.mkdtemp(prefix="paperboy-bw-", dir="/var/tmp")
www = os.path.join(work, "www"); os.makedirs(www)
if args.daemon:
    # Sparse: a hole reads as zeros (the daemon's library does not compress).
    for name in ["c0.bin", "c1.bin", "d.bin"]:
        with open(os.path.join(www, name), "wb") as f:
            f.truncate(SIZE)
else:
    for name, size in [("big.bin", SIZE), ("half.bin", SIZE // 2)] + [(f"part{i}.bin", SIZE // 4) for i in range(4)]:
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
server {{ listen 127.0.0.1:{port}; root {www}; location /noranges/ {{ alias {www}/; max_ranges 0; }} }} }}
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
    return slope([p for p in span(samples, total) if p[1] > 0])


def slope(points):
    """Least-squares slope of (time, bytes) points."""
    if len(points) < 2 or points[-1][0] <= points[0][0]:
        return float("nan")
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_b = sum(b for _, b in points) / n
    return sum((t - mean_t) * (b - mean_b) for t, b in points) / sum((t - mean_t) ** 2 for t, _ in points)


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


class Wire:
    """One client connection to the daemon, speaking its frames (docs/Daemon.md)."""

    def __init__(self, path, name):
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        self.reader = self.socket.makefile("rb")
        self.id = 0
        self.request("HELLO", {"protocols": [1], "client": name})

    def request(self, kind, payload):
        self.id += 1
        body = json.dumps(dict(payload, id=self.id)).encode()
        self.socket.sendall(f"{kind} {len(body)}\n".encode() + body)
        while True:
            answer, length = self.reader.readline().split()
            reply = json.loads(self.reader.read(int(length)))
            if answer != b"EVENT":
                if answer != b"OK" and kind != "HELLO":
                    raise SystemExit(f"{kind}: {answer.decode()} {reply}")
                return reply

    def download(self, issue, url):
        """Adds the issue and its asset, started at once; returns the asset's id."""
        self.request("ADDISSUE", {"name": issue, "date": "2026-11-21T00:00:00Z"})
        reply = self.request("ADDASSET", {"issue": issue, "request": {"url": url, "destination_path": "f.bin"}, "download": True})
        return reply["asset"]["id"]

    def close(self):
        self.socket.close()


class Daemon:
    """`paperboy daemon` on a fresh library under `limit`, logging to its folder."""

    def __init__(self, binary, folder, limit):
        self.folder, self.binary = folder, binary
        self.runtime = os.path.join(folder, "runtime"); os.makedirs(self.runtime, mode=0o700)
        self.config = os.path.join(folder, "paperboy.toml")
        self.set_limit(limit)
        self.log = os.path.join(folder, "daemon.log")
        env = dict(os.environ, XDG_RUNTIME_DIR=self.runtime, PAPERBOY_NETWORK="wired")
        self.process = subprocess.Popen([binary, "daemon", "-v", "--config", self.config], env=env,
                                        stderr=open(self.log, "w"), stdout=subprocess.DEVNULL)
        self.socket = os.path.join(self.runtime, "paperboy", "daemon.sock")
        while not os.path.exists(self.socket):
            if self.process.poll() is not None:
                raise SystemExit(f"the daemon exited: {open(self.log).read()}")
            time.sleep(0.01)

    def set_limit(self, limit):
        with open(self.config + ".tmp", "w") as f:
            f.write(f'[library]\npath = "lib"\nsync_to_disk = false\n[scheduler]\nmax_per_host = 4\n[bandwidth]\nlimit = "{limit}"\n')
        os.replace(self.config + ".tmp", self.config)

    def partial(self, asset):
        try:
            return os.path.getsize(os.path.join(self.folder, "lib", ".partial", asset))
        except OSError:
            return None

    def reloads(self):
        return open(self.log).read().count("reloaded")

    def sigterm(self):
        """SIGTERM; returns (seconds until reaped, exit status)."""
        start = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        status = self.process.wait()
        return time.monotonic() - start, status


def sample(daemon, assets, seconds, until=lambda sizes: False):
    """(time, [size of each partial file]) every 20 ms for `seconds`, or until `until(sizes)` or
    one of them is gone (finished)."""
    samples, start = [], time.monotonic()
    while time.monotonic() - start < seconds:
        sizes = [daemon.partial(a) for a in assets]
        if None in sizes or until(sizes):
            break
        samples.append((time.monotonic(), sizes))
        time.sleep(0.02)
    return samples


def wait_until(condition, what, seconds=60):
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > seconds:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.01)


def daemon_run(run):
    print(f"== run {run}: (c) two clients of one daemon, {SIZE / 1e6:.0f} MB each, under one {RATE} B/s limit ==")
    print(f"{'build':<14} {'total B/s':>12} {'ratio':>7} {'error':>8} {'shares':>13} {'Jain':>7}  window")
    for name, binary in paperboys():
        daemon = Daemon(binary, os.path.join(work, f"c{run}-{name}"), RATE)
        clients = [Wire(daemon.socket, f"client-{i}") for i in range(2)]
        assets = [client.download(f"c{i}", f"{base}/c{i}.bin") for i, client in enumerate(clients)]
        wait_until(lambda: all((daemon.partial(a) or 0) > 2_000_000 for a in assets), "2 MB of each transfer")
        samples = sample(daemon, assets, SIZE / RATE)
        (t0, s0), (t1, s1) = samples[0], samples[-1]
        moved = [b - a for a, b in zip(s0, s1)]
        total = slope([(t, sum(s)) for t, s in samples])
        shares = [m / max(1, sum(moved)) for m in moved]
        print(f"{name:<14} {total:12.0f} {total / RATE:7.4f} {100 * (total - RATE) / RATE:+7.2f}% "
              f"{shares[0]:6.3f}/{shares[1]:.3f} {jain(moved):7.4f}  {t1 - t0:.1f} s", flush=True)
        for client in clients:
            client.close()
        daemon.sigterm()

    print(f"== run {run}: (d) SIGHUP with a new limit while a transfer runs ==")
    print(f"{'build':<14} {'before B/s':>11} {'after B/s':>11} {'after/new':>9} {'SIGHUP to reloaded':>19} "
          f"{'raise: SIGHUP to 1 MB more':>27}")
    stops = []
    for name, binary in paperboys():
        daemon = Daemon(binary, os.path.join(work, f"d{run}-{name}"), RATE)
        client = Wire(daemon.socket, "client")
        asset = client.download("d", f"{base}/d.bin")
        wait_until(lambda: (daemon.partial(asset) or 0) > 2_000_000, "2 MB of the transfer")
        before = slope([(t, s[0]) for t, s in sample(daemon, [asset], 2)])
        lower = RATE // 5
        daemon.set_limit(lower)
        hup = time.monotonic()
        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: daemon.reloads() == 1, "the first reload")
        reloaded = time.monotonic() - hup
        after = slope([(t, s[0]) for t, s in sample(daemon, [asset], 4)])
        # Then from a very low limit up to RATE: how long until the transfer goes on at the new one.
        daemon.set_limit(RATE // 200)
        daemon.process.send_signal(signal.SIGHUP)
        wait_until(lambda: daemon.reloads() == 2, "the second reload")
        time.sleep(3)   # the driver settles at the low limit (a grant of 512 KiB takes 5 s at 100 kB/s)
        daemon.set_limit(RATE)
        start_bytes = daemon.partial(asset) or 0
        hup = time.monotonic()
        daemon.process.send_signal(signal.SIGHUP)
        done = sample(daemon, [asset], 30, until=lambda sizes: sizes[0] >= start_bytes + 1_000_000)
        raised = (done[-1][0] if done else time.monotonic()) - hup
        print(f"{name:<14} {before:11.0f} {after:11.0f} {after / lower:9.4f} {reloaded * 1000:16.0f} ms {raised:24.2f} s", flush=True)
        client.close()
        stops.append((name, "running a transfer", *daemon.sigterm()))
        idle = Daemon(binary, os.path.join(work, f"e{run}-{name}"), RATE)
        time.sleep(1)
        stops.append((name, "idle", *idle.sigterm()))

    print(f"== run {run}: (e) SIGTERM to exit ==")
    print(f"{'build':<14} {'daemon':<20} {'SIGTERM to reaped':>18} {'exit status':>12}")
    for name, what, seconds, status in stops:
        print(f"{name:<14} {what:<20} {seconds * 1000:15.1f} ms {status:12d}", flush=True)


print(f"paperboy: {PAPERBOY}" + (f"; baseline: {BASELINE}" if BASELINE else ""))
print(f"load average before: {load()} ({os.cpu_count()} cores)")
for run in range(1, args.runs + 1 if args.daemon else 1):
    daemon_run(run)
for run in range(1, args.runs + 1 if not args.daemon else 1):
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
    for name, command, paths, cwd in tools if "a" in args.cases else []:
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
    for name, command, paths, cwd in four if "b" in args.cases else []:
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

    print(f"== run {run}: (f) a 4-connection and a 1-connection download of {SIZE / 2e6:.0f} MB each under one {RATE} B/s limit ==")
    print(f"{'tool':<14} {'seconds':>8} {'window s':>8} {'split share':>11} {'single share':>12} {'Jain':>7}  aim 45-55 %")
    case = os.path.join(work, f"f{run}"); os.makedirs(case)
    for name, binary in paperboys() if "f" in args.cases else []:
        folder = os.path.join(case, name); os.makedirs(folder)
        with open(os.path.join(folder, "p.toml"), "w") as f:
            f.write(f'[library]\npath = "lib"\n[scheduler]\nmax_concurrent = 2\nmax_per_host = 2\nconnections_per_asset = 4\n'
                    f'[bandwidth]\nlimit = "{RATE}"\n[[issues]]\nname = "f"\ndate = 2026-11-21\n'
                    f'  [[issues.assets]]\n  url = "{base}/half.bin"\n  path = "split.bin"\n'
                    f'  [[issues.assets]]\n  url = "{base}/noranges/half.bin"\n  path = "single.bin"\n')
        folder_partial = os.path.join(folder, "lib", ".partial")
        samples = []
        start = time.monotonic()
        process = subprocess.Popen([binary, "sync", "-q", "--config", "p.toml"], cwd=folder,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while process.poll() is None:
            found = {}
            for entry in (os.listdir(folder_partial) if os.path.isdir(folder_partial) else []):
                try:
                    info = os.stat(os.path.join(folder_partial, entry))
                    found[entry] = (info.st_size, info.st_blocks * 512)
                except OSError:
                    pass
            samples.append((time.monotonic() - start, found))
            time.sleep(0.02)
        elapsed = time.monotonic() - start
        # The split file is the one written at several places: its size runs ahead of its blocks.
        names = sorted({n for _, found in samples for n in found})
        split = next((n for n in names if any(found.get(n, (0, 0))[0] - found.get(n, (0, 0))[1] > 4 << 20 for _, found in samples)), None)
        single = next((n for n in names if n != split), None)
        both = [(t, found[split][1], found[single][1]) for t, found in samples
                if split in found and single in found and found[split][1] > 0 and 0 < found[single][1] < SIZE // 2]
        if split is None or single is None or len(both) < 2:
            print(f"{name:<14} {elapsed:8.2f}  no window where both ran (split file: {split}, files: {names})", flush=True)
            continue
        (t0, a0, b0), (t1, a1, b1) = both[0], both[-1]
        moved = [a1 - a0, b1 - b0]
        shares = [m / max(1, sum(moved)) for m in moved]
        met = all(0.45 <= x <= 0.55 for x in shares)
        print(f"{name:<14} {elapsed:8.2f} {t1 - t0:8.2f} {100 * shares[0]:10.1f}% {100 * shares[1]:11.1f}% {jain(moved):7.4f}  "
              f"{'met' if met else 'NOT MET'}", flush=True)
print(f"load average after: {load()}")

nginx.send_signal(signal.SIGQUIT); nginx.wait()
shutil.rmtree(work, ignore_errors=True)
