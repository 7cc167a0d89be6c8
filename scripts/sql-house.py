#!/usr/bin/env python3
"""The SQL crate's house figures (issue 39's targets), from its source:

- files over 800 lines,
- functions over 100 lines (from a `fn` line to the closing brace at its indent),
- circles of imports among its modules (`crate::name` paths outside a file's
  `#[cfg(test)] mod tests`), each printed with its modules and the layer folders it
  spans (a module lives in the folder of its layer, docs/ARCHITECTURE.md's table).

Usage: scripts/sql-house.py [crates/walden-sql/src]
The imports that run up a layer are counted by `cargo test -p walden-sql --test
layering` (its KNOWN_EXCEPTIONS)."""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "crates/walden-sql/src"
doc = open(os.path.join(root, "../../../docs/ARCHITECTURE.md"), encoding="utf-8").read()
table = doc[doc.index("<!-- sql-layering: begin -->"):doc.index("<!-- sql-layering: end -->")]
layer_of = {}
for line in table.split("\n")[1:]:
    if ":" in line:
        name, mods = line.split(":", 1)
        for m in mods.split():
            layer_of[m] = name.strip()

files = []
for dp, _, fs in os.walk(root):
    for f in fs:
        if f.endswith(".rs"):
            files.append(os.path.join(dp, f))

long_files = []
long_fns = []
graph = {}
for p in sorted(files):
    text = open(p, encoding="utf-8").read()
    lines = text.split("\n")
    if len(lines) - 1 > 800:
        long_files.append((len(lines) - 1, p))
    for i, l in enumerate(lines):
        m = re.match(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?fn (\w+)", l)
        if not m:
            continue
        k = i
        while k < len(lines) and not lines[k].rstrip().endswith(("{", ";")):
            k += 1
        if k >= len(lines) or lines[k].rstrip().endswith(";"):
            continue
        j = k + 1
        while j < len(lines) and lines[j] != m.group(1) + "}":
            j += 1
        if j - i + 1 > 100:
            long_fns.append((j - i + 1, f"{p}:{i + 1}", m.group(7)))
    parts = [c.removesuffix(".rs") for c in os.path.relpath(p, root).split(os.sep)]
    top = parts[0]
    if top in ("lib", "main"):
        continue
    # A layer's folder holds its modules; a layer named for its main module keeps that
    # module's own files beside the others (as tests/layering.rs reads it).
    if len(parts) > 1 and layer_of.get(parts[1]) == top:
        top = parts[1]
    if top not in layer_of:
        continue
    cut = text.find("#[cfg(test)]\nmod tests")
    body = text if cut < 0 else text[:cut]
    # Code only, as the layering test reads it: a path named in a comment is no import.
    body = "\n".join(line.split("//", 1)[0] for line in body.split("\n"))
    graph.setdefault(top, set()).update(
        r for r in re.findall(r"crate::([a-z_][a-z0-9_]*)", body) if r != top
    )

graph = {m: {r for r in rs if r in graph} for m, rs in graph.items()}
index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(10000)


def connect(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on.add(v)
    for w in sorted(graph[v]):
        if w not in index:
            connect(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            circles.append(sorted(comp))


for v in sorted(graph):
    if v not in index:
        connect(v)

wide = [c for c in circles if len({layer_of[m] for m in c}) > 1]
print(f"{len(files)} files; {len(long_files)} over 800 lines; {len(long_fns)} functions over 100 lines; {len(circles)} import circles, {len(wide)} spanning more than one folder")
for n, p in sorted(long_files, reverse=True):
    print(f"  file {n} {p}")
for n, at, name in sorted(long_fns, reverse=True):
    print(f"  fn {n} {at} {name}")
for c in circles:
    folders = sorted({layer_of[m] for m in c})
    print(f"  circle of {len(c)} in {', '.join(f + '/' for f in folders)}: {' '.join(c)}")
