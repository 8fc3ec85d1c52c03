#!/usr/bin/env python3
"""Libraries of many assets: how time and peak memory grow with the asset count.

For each size (1,000, 10,000, 100,000 tiny local assets by default; 1,000 per issue), in a
fresh library, with `sync_to_disk = false` as in issue 17's measurement:

    first sync        `paperboy sync` of a configuration naming every asset (file:// sources)
    no-op sync        the same command again: everything is delivered (the configuration is
                      read and planned again)
    sync, library     `paperboy sync` with a configuration naming only the library: open it,
                      nothing to plan
    status            `paperboy status` with a configuration naming only the library
    status --json     the same, as JSON
    issues            `paperboy issues`, same configuration
    add               `paperboy add` of one new asset into the first issue
    sync after kill   in a second library: the first sync is SIGKILLed after KILL_AT of its
                      measured time, then the same sync is run again (reopen, reconcile, the
                      rest of the transfers)

Each row prints wall seconds and peak RSS (`/usr/bin/time -f`), then the growth per 10x:
how much longer each row took and how much more memory it needed than at the size 10 times
smaller. Memory flat in the asset count means "+0 MiB" there.

Run by hand, on a quiet machine:  Benchmarks/scale/run.py
Knobs (environment):
  SIZES="1000 10000 100000"  (asset counts; 1000000 is the long run: 15 minutes, 3 GiB of memory
                             for the first sync, and over 12 GiB of tmpfs, a 4 KiB page per tiny
                             file in the sources and in two libraries: TMPFS=0 if short of it)
  PER_ISSUE=1000            (assets per issue)
  READ_RUNS=3               (runs of the cheap rows: no-op sync, status, issues, add; medians)
  KILL_AT=0.5               (fraction of the first sync's time after which it is killed; 0: skip)
  SYNC_TO_DISK=0            (1: `sync_to_disk = true`, every file synced before delivery)
  TMPFS=1                   (WORK defaults to a new folder in /dev/shm; 0: in /var/tmp)
  WORK=path                 (where sources and libraries live; kept afterwards)
  PAPERBOY=path             (a built paperboy; default: Benchmarks/build.sh, a release build)
  BASELINE=path             (another paperboy, e.g. an earlier commit's, run as "paperboy-base"
                             on libraries of its own, same sources, same rounds)
Needs /usr/bin/time.
"""
import os, shutil, signal, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIZES = [int(s) for s in os.environ.get("SIZES", "1000 10000 100000").split()]
PER_ISSUE = int(os.environ.get("PER_ISSUE", "1000"))
READ_RUNS = int(os.environ.get("READ_RUNS", "3"))
KILL_AT = float(os.environ.get("KILL_AT", "0.5"))
SYNC_TO_DISK = os.environ.get("SYNC_TO_DISK", "0") == "1"
TMPFS = os.environ.get("TMPFS", "1") == "1"
WORK = os.environ.get("WORK") or tempfile.mkdtemp(
    prefix="paperboy-scale-bench.", dir="/dev/shm" if TMPFS else "/var/tmp")
ROWS = ["first sync", "no-op sync", "sync, library", "status", "status --json", "issues", "add", "sync after kill"]


def build():
    if os.environ.get("PAPERBOY"):
        return os.path.abspath(os.environ["PAPERBOY"])
    out = subprocess.run([f"{ROOT}/Benchmarks/build.sh"], check=True, stdout=subprocess.PIPE, text=True)
    return out.stdout.strip().splitlines()[-1]


def issue_name(i):
    return f"issue-{i:05d}"


def make_sources(count):
    """Tiny files, PER_ISSUE per folder, generated here (never committed); reused across runs."""
    src = f"{WORK}/src"
    for i in range((count + PER_ISSUE - 1) // PER_ISSUE):
        folder = f"{src}/{issue_name(i)}"
        if os.path.isfile(f"{folder}/.complete"):
            continue
        os.makedirs(folder, exist_ok=True)
        for j in range(PER_ISSUE):
            with open(f"{folder}/a{j:05d}.txt", "w") as f:
                f.write(f"asset {j} of {issue_name(i)}\n")
        open(f"{folder}/.complete", "w").close()
    with open(f"{src}/extra.txt", "w") as f:
        f.write("one more asset\n")


def library_section(lib):
    return f'[library]\npath = "{lib}"\nsync_to_disk = {"true" if SYNC_TO_DISK else "false"}\n'


def write_configs(name, count, lib):
    """The full configuration (every asset) and one naming only the library."""
    full, bare = f"{WORK}/{name}-{count}.toml", f"{WORK}/{name}-{count}-library.toml"
    with open(full, "w") as f:
        f.write(library_section(lib))
        for i in range((count + PER_ISSUE - 1) // PER_ISSUE):
            day = 1 + i % 28
            f.write(f'\n[[issues]]\nname = "{issue_name(i)}"\ndate = "{2000 + i // 336}-{1 + i // 28 % 12:02d}-{day:02d}"\n')
            for j in range(min(PER_ISSUE, count - i * PER_ISSUE)):
                f.write(f'[[issues.assets]]\nurl = "file://{WORK}/src/{issue_name(i)}/a{j:05d}.txt"\n')
    with open(bare, "w") as f:
        f.write(library_section(lib))
    return full, bare


def timed(cmd, out=subprocess.DEVNULL):
    """Runs cmd under /usr/bin/time: (seconds, peak MiB), or None when it failed."""
    stats = f"{WORK}/time.txt"
    result = subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", stats] + cmd,
                            stdout=out, stderr=subprocess.PIPE, text=True, cwd=WORK)
    if result.returncode != 0:
        print(f"  {' '.join(cmd[:2])} failed ({result.returncode}): {result.stderr.strip()[-300:]}", file=sys.stderr)
        return None
    with open(stats) as f:
        seconds, kib = f.read().split()[-2:]
    return float(seconds), int(kib) / 1024


def median(samples):
    samples = [s for s in samples if s]
    if not samples:
        return None
    return (statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples))


def measure(binary, name, count):
    lib = f"{WORK}/lib-{name}-{count}"
    shutil.rmtree(lib, ignore_errors=True)
    full, bare = write_configs(name, count, lib)
    rows = {}
    print(f"{name}, {count:,} assets: first sync…", file=sys.stderr)
    rows["first sync"] = timed([binary, "sync", "-q", "--config", full])
    rows["no-op sync"] = median([timed([binary, "sync", "-q", "--config", full]) for _ in range(READ_RUNS)])
    rows["sync, library"] = median([timed([binary, "sync", "-q", "--config", bare]) for _ in range(READ_RUNS)])
    rows["status"] = median([timed([binary, "status", "--config", bare]) for _ in range(READ_RUNS)])
    rows["status --json"] = median([timed([binary, "status", "--json", "--config", bare]) for _ in range(READ_RUNS)])
    rows["issues"] = median([timed([binary, "issues", "--config", bare]) for _ in range(READ_RUNS)])
    rows["add"] = median([timed([binary, "add", "-q", f"{WORK}/src/extra.txt", "--issue", issue_name(0),
                                 "--path", f"extra-{run}.txt", "--config", bare]) for run in range(READ_RUNS)])
    if KILL_AT > 0 and rows["first sync"]:
        killed = f"{lib}-killed"
        shutil.rmtree(killed, ignore_errors=True)
        kill_full, _ = write_configs(f"{name}-killed", count, killed)
        child = subprocess.Popen([binary, "sync", "-q", "--config", kill_full], cwd=WORK,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rows["first sync"][0] * KILL_AT)
        child.send_signal(signal.SIGKILL)
        child.wait()
        rows["sync after kill"] = timed([binary, "sync", "-q", "--config", kill_full])
        shutil.rmtree(killed, ignore_errors=True)
    shutil.rmtree(lib, ignore_errors=True)
    return rows


def main():
    if not os.path.exists("/usr/bin/time"):
        sys.exit("/usr/bin/time is not installed (apt-get install time)")
    binaries = [("paperboy", build())]
    if os.environ.get("BASELINE"):
        binaries.append(("paperboy-base", os.path.abspath(os.environ["BASELINE"])))
    print(f"work folder: {WORK}", file=sys.stderr)
    started = time.time()
    make_sources(max(SIZES))
    print(f"sources: {max(SIZES):,} files in {time.time() - started:.1f} s", file=sys.stderr)
    results = {}   # (binary name, size) -> rows
    for count in SIZES:
        for name, binary in binaries:   # paired: each binary at each size in the same round
            results[(name, count)] = measure(binary, name, count)

    for name, _ in binaries:
        print(f"\n{name}: seconds / peak RSS MiB, {PER_ISSUE:,} assets per issue, "
              f"sync_to_disk = {str(SYNC_TO_DISK).lower()}, {'tmpfs' if TMPFS else 'disk'}")
        header = f"{'row':<16}" + "".join(f"{count:>18,}" for count in SIZES)
        if len(SIZES) > 1:
            header += "   growth per 10x (time, memory)"
        print(header)
        for row in ROWS:
            cells, previous, growth = "", None, []
            for count in SIZES:
                value = results[(name, count)].get(row)
                cells += f"{value[0]:>10.2f} {value[1]:>5.0f} MiB" if value else f"{'-':>18}"
                if value and previous and previous[1] and count == previous[0] * 10:
                    before = previous[1]
                    growth.append(f"x{value[0] / max(before[0], 0.01):.1f} {value[1] - before[1]:+.0f} MiB")
                previous = (count, value)
            print(f"{row:<16}{cells}   {', '.join(growth)}")
    print(f"\nwork folder: {WORK}; load average at the end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
