#!/usr/bin/env python3
"""Issue 29's rows about damage to an indexed download, bytes counted at the server (nginx's
$body_bytes_sent and the Range of every request, as Benchmarks/kill/run.py logs them; its
nginx, log reader and kill loop are used here, not copied):

    damage.py PAPERBOY repair|kill…

repair  `paperboy sync` of an indexed SIZE_MB MiB file is SIGKILLed once its partial file holds
        90 %; one byte is flipped in each of 3 different chunks of that partial file; a second
        sync completes it. re-fetched = the bytes of its requests other than the one for the
        rest of the file (which starts at the chunk boundary the partial file ends at). Aim:
        <= the 3 damaged chunks.
kill    the same download SIGKILLed KILLS (5) times at random points (MIN_S-MAX_S s after each
        start, seed SEED), then completed and compared with the source. Per kill, as in
        Benchmarks/kill: re-fetched = start_i + sent_i - start_(i+1). The same kills of the same
        file fetched whole (no index) are the pair: what the kernel took on the socket while the
        killed process was torn down (Benchmarks/kill explains it), which varies by a few 100 KB
        from kill to kill. Aim: the mean re-fetched minus the pair's <= the chunks in flight
        (one chunk being received, at most the index's largest).

Knobs (environment): SIZE_MB=1024 KILLS=5 SEED=1 MIN_S=0.6 MAX_S=1.4 RATE=50m (nginx
limit_rate, per connection) WORK=/var/tmp/... (removed at the end). Needs nginx.
"""
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("WORK", tempfile.mkdtemp(prefix="paperboy-damage-bench.", dir="/var/tmp"))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "kill")]
import pbidx  # noqa: E402  (the chunk index reader of docs/ChunkIndex.md)
import run as kill  # noqa: E402  (Benchmarks/kill/run.py: nginx, the log, the kill loop)

WORK = kill.WORK
SIZE_MB = int(os.environ.get("SIZE_MB", "1024"))
KILLS = int(os.environ.get("KILLS", "5"))


def configure(name, port, indexed=True):
    """A library in WORK/NAME syncing WORK/www/NAME.bin: the sync command."""
    folder = f"{WORK}/{name}"
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/paperboy.toml", "w") as f:
        f.write(f'[library]\npath = "{folder}/lib"\n[[issues]]\nname = "damage"\ndate = 2026-11-27\n'
                f'  [[issues.assets]]\n  url = "http://127.0.0.1:{port}/{name}.bin"\n  path = "big.bin"\n'
                + ("  indexed = true\n" if indexed else ""))
    return [PAPERBOY, "sync", "-q", "--config", f"{folder}/paperboy.toml"]


def delivered_intact(name):
    delivered = f"{WORK}/{name}/lib/Issues/damage/big.bin"
    return os.path.exists(delivered) and subprocess.run(["cmp", "-s", delivered, f"{WORK}/www/big.bin"]).returncode == 0


def offsets(chunks):
    """(offset, length) of every chunk."""
    found, at = [], 0
    for length, _ in chunks:
        found.append((at, length))
        at += length
    return found


def repair(port, chunks, size):
    command = configure("repair", port)
    partials = f"{WORK}/repair/lib/.partial"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    length = 0
    while process.poll() is None and length < 0.9 * size:
        time.sleep(0.005)
        names = os.listdir(partials) if os.path.isdir(partials) else []
        length = max((os.path.getsize(f"{partials}/{n}") for n in names), default=0)
    process.kill()
    process.wait()
    [partial] = [f"{partials}/{n}" for n in os.listdir(partials)]
    length = os.path.getsize(partial)
    kept = [(offset, count) for offset, count in offsets(chunks) if offset + count <= length]
    damaged = sorted(random.Random(int(os.environ.get("SEED", "1"))).sample(kept, 3))
    with open(partial, "r+b") as f:
        for offset, count in damaged:
            f.seek(offset + count // 2)
            byte = f.read(1)[0]
            f.seek(offset + count // 2)
            f.write(bytes([byte ^ 0x5A]))
    before = len(kill.log_requests("/repair.bin"))
    start = time.perf_counter()
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    time.sleep(0.3)  # nginx logs a request once it notices the closed connection
    requests = kill.log_requests("/repair.bin")[before:]
    rest = [asked for asked, _ in requests if asked.endswith(f"-{size - 1}")]
    refetched = sum(sent for asked, sent in requests if not asked.endswith(f"-{size - 1}"))
    aim = sum(count for _, count in damaged)
    print(f"repair: {SIZE_MB} MiB, partial file of {length} bytes killed at 90 %, 3 bytes flipped at "
          f"{[offset + count // 2 for offset, count in damaged]}")
    print(f"  second sync: exit {finished.returncode}, {seconds:.2f} s, delivered byte-identical: {delivered_intact('repair')}; "
          f"requests {[asked for asked, _ in requests]}")
    print(f"  re-fetched {refetched} bytes in {len(requests) - len(rest)} requests; the 3 damaged chunks are {aim} bytes: "
          f"{'met' if refetched <= aim else 'MISSED'}")


def kills(port, chunks, size):
    command = configure("kill", port)
    rng = random.Random(int(os.environ.get("SEED", "1")))
    delays = [rng.uniform(kill.MIN_S, kill.MAX_S) for _ in range(KILLS)]
    _, waste, exit_ms = kill.kill_runs("kill", command, "/kill.bin", delays)
    finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, whole, whole_exit_ms = kill.kill_runs("plain", configure("plain", port, indexed=False), "/plain.bin", delays)
    time.sleep(0.3)
    largest = max(length for length, _ in chunks)
    print(f"kill: {SIZE_MB} MiB at nginx limit_rate {kill.RATE}, {KILLS} SIGKILLs at {kill.MIN_S}-{kill.MAX_S} s (seed "
          f"{os.environ.get('SEED', '1')}), then a run to the end: exit {finished.returncode}, "
          f"delivered byte-identical: {delivered_intact('kill')}; median SIGKILL to reaped {exit_ms:.1f} ms "
          f"(fetched whole: {whole_exit_ms:.1f} ms)")
    print(f"{'kill':>6} {'resumed at':>12} {'re-fetched B':>12} {'fetched whole B':>15}")
    served = kill.log_lines("/kill.bin")
    for i, (refetched, pair) in enumerate(zip(waste[:KILLS], whole[:KILLS]), 1):
        print(f"{i:>6} {served[i][0]:>12} {refetched:>12} {pair:>15}")
    mean, pair = sum(waste[:KILLS]) / KILLS, sum(whole[:KILLS]) / KILLS
    print(f"  mean {mean:.0f} B re-fetched, {pair:.0f} B fetched whole: {mean - pair:.0f} B more <= {largest} "
          f"(largest chunk): {'met' if mean - pair <= largest else 'MISSED'}")
    print(f"  (every indexed run also fetches the index again: {os.path.getsize(f'{WORK}/www/big.bin.pbidx')} bytes)")


def main():
    global PAPERBOY
    if len(sys.argv) < 3 or any(case not in ("repair", "kill") for case in sys.argv[2:]):
        sys.exit(__doc__)
    PAPERBOY = sys.argv[1]
    data = f"{WORK}/www"
    os.makedirs(data, exist_ok=True)
    with open(f"{data}/big.bin", "wb") as f:
        for _ in range(SIZE_MB):
            f.write(os.urandom(1 << 20))
    subprocess.run([PAPERBOY, "index", "--quiet", f"{data}/big.bin"], check=True)
    os.symlink("big.bin", f"{data}/plain.bin")
    for name in ("repair", "kill"):
        os.symlink("big.bin", f"{data}/{name}.bin")
        os.symlink("big.bin.pbidx", f"{data}/{name}.bin.pbidx")
    chunks = pbidx.read(f"{data}/big.bin.pbidx")[5]
    port = kill.free_port()
    kill.start_nginx(data, port)
    try:
        for case in sys.argv[2:]:
            (repair if case == "repair" else kills)(port, chunks, SIZE_MB << 20)
    finally:
        with open(f"{WORK}/nginx/nginx.pid") as f:
            os.kill(int(f.read()), 15)
        if os.environ.get("KEEP") != "1":
            subprocess.run(["rm", "-rf", WORK])


if __name__ == "__main__":
    sys.exit(main())
