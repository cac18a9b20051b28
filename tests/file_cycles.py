#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Fails when the .c files of a directory call each other in a loop.

Each file's external functions (defined at the top level, not static) are
its exports; file A depends on file B when A calls one of B's exports.  A
cycle in that graph (a strongly connected component of more than one file)
is printed with one call per edge, and the exit status is 1.

  tests/file_cycles.py cmd/walk [--exclude multinode.c]
"""
import argparse
import os
import re
import sys

DEF = re.compile(r"^[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def strip(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return text


def graph(directory, exclude):
    files = sorted(f for f in os.listdir(directory) if f.endswith(".c") and f not in exclude)
    text = {f: strip(open(os.path.join(directory, f), encoding="utf-8").read()) for f in files}
    owner = {}
    for f in files:
        for m in DEF.finditer(text[f]):
            head = text[f][m.start():m.end()]
            if not head.lstrip().startswith("static"):
                owner[m.group(1)] = f
    edges = {f: {} for f in files}
    for f in files:
        for m in CALL.finditer(text[f]):
            g = owner.get(m.group(1))
            if g and g != f:
                edges[f].setdefault(g, m.group(1))
    return files, edges


def sccs(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
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
            out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("directory")
    ap.add_argument("--exclude", action="append", default=[])
    a = ap.parse_args()
    files, edges = graph(a.directory, set(a.exclude))
    loops = [c for c in sccs(files, edges) if len(c) > 1]
    for comp in loops:
        print(f"{a.directory}: {len(comp)} files call each other in a loop: {' '.join(comp)}")
        for f in comp:
            for g, fn in sorted(edges[f].items()):
                if g in comp:
                    print(f"  {f} -> {g} ({fn})")
    if not loops:
        print(f"{a.directory}: {len(files)} files, no loop of calls")
    return 1 if loops else 0


if __name__ == "__main__":
    sys.exit(main())
