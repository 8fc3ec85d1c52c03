#!/usr/bin/env python3
"""Issue 29's cases, v1.bin and v2.bin written to FOLDER (test data, made at run time):

    cases.py corrected|unchanged|next|shared FOLDER SIZE_MB

corrected  v1 random; v2 = v1 with 10 regions of 400 KB rewritten and 1 MB inserted in the
           middle (5.0 MB changed)
unchanged  v2 = v1 (0 bytes changed)
next       v2 shares 60 % of v1's content in shuffled 1 MB blocks, the rest new (40 % changed)
shared     v2 = v1 (another issue's file under another name), and small.bin (100 KB) beside it:
           v2 holds nothing v1 does not (0 bytes changed; small.bin is not counted)

Prints the bytes changed (what v2 holds that v1 does not). Sizes are MB, 10^6 bytes.
"""
import os
import random
import sys

BLOCK = 1_000_000


def write(folder, v1, v2):
    paths = os.path.join(folder, "v1.bin"), os.path.join(folder, "v2.bin")
    for path, data in zip(paths, (v1, v2)):
        with open(path, "wb") as file:
            file.write(data)
    return paths


def corrected_issue(folder, size_mb):
    """v1 random, v2 = v1 with 10 regions of 400 KB rewritten and 1 MB inserted in the middle."""
    generator = random.Random(30)
    v1 = bytearray(generator.randbytes(size_mb * BLOCK))
    v2 = bytearray(v1)
    for region in range(10):
        at = (region * 2 + 1) * len(v2) // 21
        v2[at:at + 400_000] = generator.randbytes(400_000)
    middle = len(v2) // 2
    v2[middle:middle] = generator.randbytes(BLOCK)
    return write(folder, v1, v2), 10 * 400_000 + BLOCK


def unchanged(folder, size_mb):
    v1 = random.Random(31).randbytes(size_mb * BLOCK)
    return write(folder, v1, v1), 0


def shared(folder, size_mb):
    """v2 = v1, served as another issue's file; small.bin is that issue's other, new file."""
    generator = random.Random(33)
    v1 = generator.randbytes(size_mb * BLOCK)
    with open(os.path.join(folder, "small.bin"), "wb") as file:
        file.write(generator.randbytes(100_000))
    return write(folder, v1, v1), 0


def next_issue(folder, size_mb):
    """v2: 60 % of v1's 1 MB blocks and 40 % new ones, all of the same size, in a shuffled order."""
    generator = random.Random(32)
    v1 = generator.randbytes(size_mb * BLOCK)
    kept = generator.sample(range(size_mb), size_mb * 6 // 10)
    blocks = [v1[i * BLOCK:(i + 1) * BLOCK] for i in kept]
    new = size_mb - len(blocks)
    blocks += [generator.randbytes(BLOCK) for _ in range(new)]
    generator.shuffle(blocks)
    return write(folder, v1, b"".join(blocks)), new * BLOCK


CASES = {"corrected": corrected_issue, "unchanged": unchanged, "next": next_issue, "shared": shared}

if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in CASES:
        sys.exit(__doc__)
    _, changed = CASES[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
    print(changed)
