#!/usr/bin/env python3
"""The largest Rust files and the longest functions of the tree, as the
structure reviews count them: non-test code only (`tests.rs`, `tests/`,
benches, fuzz, examples and `#[cfg(test)] mod tests` left out), a function's
length from its `fn` line to its closing brace.

    scripts/sizes.py [N]            the N largest of each (default 15)
"""

import pathlib
import re
import subprocess
import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 15
ROOT = pathlib.Path(__file__).resolve().parents[1]
SKIP = re.compile(r"(^|/)(tests|benches|fuzz|examples)/|(^|/)tests\.rs$|^ebpf-probes/probes/")
FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?fn\s+([A-Za-z_0-9]+)")


def production(text):
    """The text before the file's test module."""
    i = text.find("#[cfg(test)]\nmod tests")
    return text if i < 0 else text[:i]


def functions(lines):
    """(length, first line, name) of every function, by brace matching."""
    out = []
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        depth, opened = 0, False
        for j in range(i, len(lines)):
            code = re.sub(r'"(\\.|[^"\\])*"|//.*$', "", lines[j])
            if not opened and ";" in code and "{" not in code:
                break  # a declaration without a body
            depth += code.count("{") - code.count("}")
            opened = opened or "{" in code
            if opened and depth <= 0:
                out.append((j - i + 1, i + 1, m.group(6)))
                break
    return out


files = subprocess.run(["git", "ls-files", "*.rs"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
sizes, fns = [], []
for f in files:
    if SKIP.search(f):
        continue
    lines = production((ROOT / f).read_text(errors="replace")).splitlines()
    sizes.append((len(lines), f))
    fns += [(n, f"{f}:{at}", name) for n, at, name in functions(lines)]
sizes.sort(reverse=True)
fns.sort(reverse=True)
print(f"largest files (non-test lines), top {N}:")
for n, f in sizes[:N]:
    print(f"  {n:6} {f}")
print(f"\nlongest functions, top {N} (of {len(fns)}; {sum(1 for x in fns if x[0] > 80)} over 80 lines, "
      f"{sum(1 for x in fns if x[0] > 100)} over 100):")
for n, at, name in fns[:N]:
    print(f"  {n:6} {at} {name}")
