#!/usr/bin/env python3
"""The chunk index of docs/ChunkIndex.md written again from the document alone, in Python:
a reader of .pbidx files and the cut rule, for the benchmarks and to check that the document
says enough to rebuild the cuts.

    pbidx.py show FILE.pbidx     the header, the chunk count and the size distribution
    pbidx.py check FILE          cuts FILE by the document's rule (slow: ~2 MB/s) and compares
                                 with FILE.pbidx; exits 1 on any difference
"""
import hashlib
import statistics
import struct
import sys

HEADER = struct.Struct(">5sBIIIQ32sQ")  # 66 bytes
ENTRY = struct.Struct(">I32s")          # 36 bytes
GEAR = [int.from_bytes(hashlib.sha256(bytes([b])).digest()[:8], "big") for b in range(256)]
MASK64 = (1 << 64) - 1


def read(path):
    """(min, avg, max, size, sha256, [(length, sha256)]) of an index file."""
    data = open(path, "rb").read()
    magic, version, minimum, average, maximum, size, digest, count = HEADER.unpack_from(data)
    assert magic == b"PBIDX" and version == 1, "not a version 1 chunk index"
    assert len(data) == HEADER.size + count * ENTRY.size, "size does not match the count"
    chunks = [ENTRY.unpack_from(data, HEADER.size + i * ENTRY.size) for i in range(count)]
    return minimum, average, maximum, size, digest, chunks


def top_bits(count):
    return 0 if count <= 0 else (MASK64 << (64 - count)) & MASK64


def cuts(data, minimum, average, maximum):
    """The chunk lengths of `data` by the cut rule of docs/ChunkIndex.md."""
    bits = average.bit_length() - 1
    strict, loose = top_bits(bits + 2), top_bits(bits - 2)
    lengths, start = [], 0
    while start < len(data):
        remaining = len(data) - start
        if remaining <= minimum:
            lengths.append(remaining)
            break
        end = min(remaining, maximum)
        normal = min(average, end)
        h, i, length = 0, minimum, end
        while i < end:
            h = ((h << 1) + GEAR[data[start + i]]) & MASK64
            i += 1
            if h & (strict if i <= normal else loose) == 0:
                length = i
                break
        lengths.append(length)
        start += length
    return lengths


def distribution(lengths):
    """Count, mean, and the 0/10/50/90/100th percentiles, in KiB, of all chunks but the last."""
    body = sorted(lengths[:-1]) or lengths
    pick = lambda q: body[min(len(body) - 1, int(q * len(body)))] / 1024
    return (f"{len(lengths)} chunks, mean {statistics.mean(body) / 1024:.1f} KiB, min {pick(0):.1f}, "
            f"p10 {pick(0.1):.1f}, median {pick(0.5):.1f}, p90 {pick(0.9):.1f}, max {pick(1.0):.1f} KiB")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("show", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "show":
        minimum, average, maximum, size, digest, chunks = read(sys.argv[2])
        print(f"{sys.argv[2]}: {minimum}/{average}/{maximum}, {size} bytes, SHA-256 {digest.hex()}")
        print(distribution([length for length, _ in chunks]))
        return
    path = sys.argv[2]
    minimum, average, maximum, size, digest, chunks = read(path + ".pbidx")
    data = open(path, "rb").read()
    ours = cuts(data, minimum, average, maximum)
    theirs = [length for length, _ in chunks]
    offsets = [sum(ours[:i]) for i in range(len(ours))]
    hashes = [hashlib.sha256(data[o:o + n]).digest() for o, n in zip(offsets, ours)]
    same = ours == theirs and hashes == [h for _, h in chunks] and hashlib.sha256(data).digest() == digest
    print(f"{path}: {len(ours)} chunks by the document's rule, {len(theirs)} in the index: {'same' if same else 'DIFFERENT'}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
