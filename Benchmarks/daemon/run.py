#!/usr/bin/env python3
"""The daemon at rest and after many feed refreshes (run by hand, not by CI).

  Benchmarks/daemon/run.py [--idle 60] [--notifies 400] [--feeds 4] [--new-every 25] [--no-feeds]

(a) Idle CPU: `paperboy daemon` on a library with FEEDS feeds (`refresh = "6h"`, their next
    refresh recorded 5 h ahead in feed-schedule.json, so none is due), no client. After 3 s of
    settling, the process's utime+stime from /proc/PID/stat over IDLE seconds, in clock ticks
    and as a share of one core; and its voluntary context switches (wake-ups) over the same time.
(b) RSS after a day's worth of refreshes and more: NOTIFY requests sent back to back on one
    connection (`dont_throttle = true`), each refreshing every feed (so NOTIFIES x FEEDS feed
    refreshes; a day of 4 feeds every 6 h is 16). The catalogs are local files; every NEW_EVERY
    notifies each feed gets a new issue (a 20 kB asset), so refreshes add and download issues as
    a day's would (0: the catalogs never change, which isolates the refresh itself). VmRSS from /proc/PID/status before the first and after every 100 notifies;
    printed: RSS growth per 100 feed refreshes over the second half (the first refreshes warm
    caches and SQLite's page cache).

Environment: PAPERBOY=path (a built paperboy; default Benchmarks/build.sh, the release build).
The load average is printed before and after.
"""
import argparse, json, os, shutil, socket, subprocess, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
parser = argparse.ArgumentParser()
parser.add_argument("--idle", type=int, default=60)
parser.add_argument("--notifies", type=int, default=400)
parser.add_argument("--feeds", type=int, default=4)
parser.add_argument("--new-every", type=int, default=25, help="notifies between new issues (0: never)")
parser.add_argument("--no-feeds", action="store_true", help="idle only, no [[feeds]] (a build without feed schedules)")
args = parser.parse_args()

PAPERBOY = subprocess.run([os.path.join(ROOT, "Benchmarks", "build.sh")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
work = tempfile.mkdtemp(prefix="paperboy-daemon-", dir="/var/tmp")
runtime = os.path.join(work, "runtime"); os.makedirs(runtime, mode=0o700)
library = os.path.join(work, "lib"); os.makedirs(library, mode=0o700)
TICKS = os.sysconf("SC_CLK_TCK")


def load():
    return open("/proc/loadavg").read().split()[:3]


def publish(feed, issues):
    folder = os.path.join(work, f"feed{feed}")
    os.makedirs(os.path.join(folder, "content"), exist_ok=True)
    listed = []
    for n in range(issues):
        name = f"f{feed}-{n:04d}"
        path = os.path.join(folder, "content", f"{name}.pdf")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(os.urandom(20_000))
        listed.append({"name": name, "date": "2026-11-21", "assets": [{"url": f"content/{name}.pdf", "path": "magazine.pdf"}]})
    with open(os.path.join(folder, "catalog.json.tmp"), "w") as f:
        json.dump({"issues": listed}, f)
    os.replace(os.path.join(folder, "catalog.json.tmp"), os.path.join(folder, "catalog.json"))


for feed in range(args.feeds):
    publish(feed, 1)
config = os.path.join(work, "paperboy.toml")
with open(config, "w") as f:
    f.write(f'[library]\npath = "{library}"\n[notifications]\ndont_throttle = true\n')
    for feed in range(0 if args.no_feeds else args.feeds):
        f.write(f'[[feeds]]\nname = "feed{feed}"\nurl = "{work}/feed{feed}/catalog.json"\nrefresh = "6h"\n')
ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 5 * 3600))
with open(os.path.join(library, "feed-schedule.json"), "w") as f:
    json.dump({"version": 1, "feeds": {f"feed{n}": {"next_refresh": ahead} for n in range(args.feeds)}}, f)

print(f"paperboy {PAPERBOY}; load average before: {' '.join(load())}")
env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
env.pop("PAPERBOY_NETWORK", None)   # the real network monitor (netlink)
log = open(os.path.join(work, "daemon.log"), "w")
daemon = subprocess.Popen([PAPERBOY, "daemon", "-q", "--config", config], env=env, stderr=log)
sock_path = os.path.join(runtime, "paperboy", "daemon.sock")
for _ in range(500):
    if os.path.exists(sock_path):
        break
    time.sleep(0.01)


def cpu_ticks():
    fields = open(f"/proc/{daemon.pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])   # utime, stime (fields 14 and 15)


def status(key, task=None):
    path = f"/proc/{daemon.pid}/task/{task}/status" if task else f"/proc/{daemon.pid}/status"
    for line in open(path):
        if line.startswith(key + ":"):
            return int(line.split()[1])


def wakeups():
    """Voluntary context switches of every thread, by thread name."""
    counts = {}
    for task in os.listdir(f"/proc/{daemon.pid}/task"):
        try:
            name = open(f"/proc/{daemon.pid}/task/{task}/comm").read().strip()
            counts[f"{name}/{task}"] = status("voluntary_ctxt_switches", task)
        except OSError:
            pass
    return counts


try:
    time.sleep(3)
    ticks, before, start = cpu_ticks(), wakeups(), time.monotonic()
    time.sleep(args.idle)
    after = wakeups()
    ticks = cpu_ticks() - ticks
    woke = {name: count - before.get(name, 0) for name, count in after.items() if count - before.get(name, 0) > 0}
    switches = sum(woke.values())
    elapsed = time.monotonic() - start
    print(f"(a) idle {elapsed:.1f} s: {ticks} ticks of CPU ({ticks / TICKS * 1000:.0f} ms, "
          f"{ticks / TICKS / elapsed * 100:.3f} % of a core), {switches} voluntary context switches "
          f"({switches / elapsed:.2f}/s); RSS {status('VmRSS')} kB")
    print(f"    threads that woke: {', '.join(f'{name} {count}' for name, count in sorted(woke.items())) or 'none'}")

    if args.no_feeds:
        raise SystemExit(0)
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    reader = s.makefile("rb")

    def request(kind, payload):
        body = json.dumps(payload).encode()
        s.sendall(f"{kind} {len(body)}\n".encode() + body)
        while True:
            kind_read, length = reader.readline().split()
            reply = json.loads(reader.read(int(length)))
            if kind_read != b"EVENT":
                return kind_read.decode(), reply

    request("HELLO", {"protocols": [1], "client": "benchmark"})
    rss = [(0, status("VmRSS"))]
    issues = 1
    started = time.monotonic()
    for n in range(1, args.notifies + 1):
        if args.new_every and n % args.new_every == 0:
            issues += 1
            for feed in range(args.feeds):
                publish(feed, issues)
        kind, reply = request("NOTIFY", {"id": n})
        if kind != "OK" or reply.get("result") != "refreshed" or reply.get("failures"):
            raise SystemExit(f"notify {n}: {kind} {reply}")
        if n % 100 == 0:
            rss.append((n, status("VmRSS")))
    took = time.monotonic() - started
    refreshes = args.notifies * args.feeds
    print(f"(b) {args.notifies} notifies = {refreshes} feed refreshes in {took:.1f} s "
          f"({took / refreshes * 1000:.1f} ms each); {issues} issues per feed at the end")
    for n, kb in rss:
        print(f"    after {n:4d} notifies ({n * args.feeds:5d} feed refreshes): VmRSS {kb} kB")
    half = rss[len(rss) // 2:]
    if len(half) > 1:
        per100 = (half[-1][1] - half[0][1]) / ((half[-1][0] - half[0][0]) * args.feeds) * 100
        print(f"    growth over the second half: {per100:.1f} kB per 100 feed refreshes")
    s.close()
finally:
    daemon.terminate()
    daemon.wait()
    print(f"load average after: {' '.join(load())}")
    shutil.rmtree(work, ignore_errors=True)
