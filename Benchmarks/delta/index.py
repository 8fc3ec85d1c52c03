#!/usr/bin/env python3
"""Indexing cost and the choice of chunk sizes (docs/Benchmarks.md, "Delta"; issue 29).

    Benchmarks/delta/index.py [--size-mib 1024] [--rounds 3] [--sizes-mb 200]

1. Throughput: `paperboy index` on a random file of --size-mib MiB (page cache warm) against
   `sha256sum` of the same file, the floor (one SHA-256 pass; the index makes two: the chunks'
   and the whole file's). Medians of --rounds paired runs, MB/s (10^6 bytes/s), CPU seconds,
   the ratio; and the chunk size distribution on that random data.
2. Chunk sizes: issue 29's corrected issue on --sizes-mb MB (v2 = v1 with 10 regions of
   400 KB rewritten and 1 MB inserted in the middle) indexed with each candidate
   MIN/AVG/MAX: bytes a client would fetch (v2's chunks that v1 lacks, plus v2's index) and the
   index's size.

`paperboy` comes from Benchmarks/build.sh (PAPERBOY=path to use another build). Files go to
$TMPDIR (default /var/tmp) and are removed.
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pbidx  # noqa: E402
from cases import corrected_issue  # noqa: E402

CANDIDATES = ["4096/16384/65536", "8192/32768/131072", "16384/65536/262144", "32768/131072/524288", "65536/262144/1048576"]


def timed(command):
    """Wall and CPU (user + system) seconds of one run of `command`."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def random_file(path, size, seed):
    generator = random.Random(seed)
    with open(path, "wb") as file:
        left = size
        while left > 0:
            block = min(left, 8 << 20)
            file.write(generator.randbytes(block))
            left -= block


def throughput(paperboy, folder, size_mib, rounds):
    path = os.path.join(folder, "random.bin")
    size = size_mib << 20
    random_file(path, size, seed=29)
    subprocess.run(["cat", path], check=True, stdout=subprocess.DEVNULL)  # warm the page cache
    runs = {"sha256sum": [], "paperboy index": []}
    for _ in range(rounds):
        runs["sha256sum"].append(timed(["sha256sum", path]))
        runs["paperboy index"].append(timed([paperboy, "index", "--quiet", path]))
    load = os.getloadavg()[0]
    print(f"throughput: {size_mib} MiB random, page cache warm, median of {rounds}, load {load:.1f}")
    medians = {}
    for tool, values in runs.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        medians[tool] = wall
        print(f"  {tool:15} {wall:6.2f} s  {size / wall / 1e6:7.0f} MB/s  CPU {cpu:5.2f} s ({size / cpu / 1e6:.0f} MB/s per core)")
    print(f"  ratio index / sha256sum: {medians['paperboy index'] / medians['sha256sum']:.2f}")
    print("  distribution:", pbidx.distribution([length for length, _ in pbidx.read(path + ".pbidx")[5]]))
    os.remove(path)
    os.remove(path + ".pbidx")


def chunk_sizes(paperboy, folder, size_mb):
    (v1, v2), _ = corrected_issue(folder, size_mb)
    print(f"chunk sizes: corrected issue, {size_mb} MB, 5.0 MB changed (10 x 400 KB rewritten, 1 MB inserted)")
    print(f"  {'MIN/AVG/MAX (KiB)':22} {'chunks':>7} {'mean KiB':>9} {'index KB':>9} {'fetched MB':>11} {'x changed':>10} {'index s':>8}")
    for sizes in CANDIDATES:
        wall, _ = timed([paperboy, "index", "--quiet", "--chunk-sizes", sizes, v1])
        subprocess.run([paperboy, "index", "--quiet", "--chunk-sizes", sizes, v2], check=True)
        have = {digest for _, digest in pbidx.read(v1 + ".pbidx")[5]}
        chunks = pbidx.read(v2 + ".pbidx")[5]
        index_bytes = os.path.getsize(v2 + ".pbidx")
        fetched = sum(length for length, digest in chunks if digest not in have) + index_bytes
        label = "/".join(str(int(s) // 1024) for s in sizes.split("/"))
        mean = statistics.mean(length for length, _ in chunks) / 1024
        print(f"  {label:22} {len(chunks):7} {mean:9.1f} {index_bytes / 1000:9.0f} {fetched / 1e6:11.2f} "
              f"{fetched / 5e6:10.2f} {wall:8.2f}")
    for path in (v1, v2):
        os.remove(path)
        os.remove(path + ".pbidx")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes-mb", type=int, default=200)
    arguments = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paperboy = subprocess.run([os.path.join(root, "build.sh")], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/var/tmp"), prefix="pb-delta-") as folder:
        throughput(paperboy, folder, arguments.size_mib, arguments.rounds)
        chunk_sizes(paperboy, folder, arguments.sizes_mb)


if __name__ == "__main__":
    main()
