#!/usr/bin/env python3
"""Prints a symbol ordering file (one mangled name per line) from callgrind profiles.

    order-from-callgrind.py OBJECT PROFILE...

Only functions of the object whose file name is OBJECT are listed. Functions executed by more
of the profiled runs come first (start-up and the sync core, then each transport's), and
within that, in the order the profiles first name them (profiles taken in the order of the
number that ends their file name, callgrind's process id, so in the order they ran).
"""
import re
import sys

target = sys.argv[1]
runs_of = {}   # name -> number of profiles it appears in
first_seen = {}

def run_order(path):
    suffix = path.rsplit(".", 1)[-1]
    return (0, int(suffix)) if suffix.isdigit() else (1, path)

for index, path in enumerate(sorted(sys.argv[2:], key=run_order)):
    objects, functions, seen = {}, {}, set()
    current_object = callee_object = None
    with open(path, errors="replace") as profile:
        for line in profile:
            line = line.rstrip("\n")
            match = re.match(r"^(ob|cob)=\((\d+)\)(?: (.*))?$", line)
            if match:
                kind, key, name = match.groups()
                if name is not None:
                    objects[key] = name
                if kind == "ob":
                    current_object, callee_object = objects.get(key), None
                else:
                    callee_object = objects.get(key)
                continue
            match = re.match(r"^(fn|cfn)=\((\d+)\)(?: (.*))?$", line)
            if not match:
                continue
            kind, key, name = match.groups()
            if name is not None:
                functions[key] = name
            obj = current_object if kind == "fn" else (callee_object or current_object)
            callee_object = None
            name = functions.get(key)
            if not (obj and name and obj.rsplit("/", 1)[-1] == target):
                continue
            name = re.sub(r"'\d+$", "", name)  # callgrind's suffix for recursion cycles
            if name not in seen:
                seen.add(name)
                runs_of[name] = runs_of.get(name, 0) + 1
                first_seen.setdefault(name, (index, len(first_seen)))

for name in sorted(runs_of, key=lambda n: (-runs_of[n], first_seen[n])):
    print(name)
