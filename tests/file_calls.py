#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Which C files call which, and whether any of them call each other in a loop.

Every function defined in the files given is mapped to its file; every use of
a name (a call, or a function's address taken) inside a function body is an
edge from its file to the files that define that name (a static function, or
a name the file defines itself, stays inside the file).  The file graph must
have no cycle: a loop means the files are one unit cut in pieces, and the
order the issue asks for (every call pointing down) does not hold.

  file_calls.py [--root DIR] [--order] [PATH...]
PATHs are files or directories (searched recursively for *.c); the default is
core/agent and core/chan under --root (default: the current directory).
Exit 0: no cycle (with --order, the files bottom first); 1: a cycle, printed
with the calls that make it; 2: bad usage.
"""
import argparse
import os
import re
import sys

KEYWORDS = {
    "if", "while", "for", "switch", "return", "sizeof", "do", "else", "case",
    "goto", "break", "continue", "default", "typedef", "struct", "union", "enum",
    "_Alignof", "_Static_assert", "__attribute__", "alignof", "offsetof",
    "__typeof__", "typeof", "_Generic", "defined",
}


def strip(text):
    """Comments, strings, character constants and preprocessor lines blanked (line count kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            j = i
            while True:  # continued lines belong to the directive
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] != "\\":
                    break
                j = k + 1
            out.append(re.sub(r"[^\n]", " ", text[i:k]))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


TOKEN = re.compile(r"[A-Za-z_]\w*|[{}();]|\S")


def scan(path):
    """(definitions {name: static?}, uses [(function, name, line)]) of one file."""
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    toks = [(m.group(0), text.count("\n", 0, m.start()) + 1) for m in TOKEN.finditer(text)]
    defs, uses = {}, []
    depth, i, current, prefix = 0, 0, None, []
    while i < len(toks):
        t, line = toks[i]
        if depth == 0:
            if t == "{":
                # A function body if the declaration just before it ends in name(...)
                j, name = len(prefix) - 1, None
                if j >= 0 and prefix[j] == ")":
                    level = 0
                    while j >= 0:
                        level += prefix[j] == ")"
                        level -= prefix[j] == "("
                        if level == 0:
                            break
                        j -= 1
                    if j > 0 and re.match(r"[A-Za-z_]\w*$", prefix[j - 1]) and prefix[j - 1] not in KEYWORDS:
                        name = prefix[j - 1]
                if name:
                    defs[name] = "static" in prefix
                    current = name
                depth = 1
                prefix = []
            elif t in (";", "}"):
                prefix = []
            else:
                prefix.append(t)
        else:
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    current = None
                    prefix = []
            elif current and re.match(r"[A-Za-z_]\w*$", t) and t not in KEYWORDS:
                prev = toks[i - 1][0] if i else ""
                if prev not in (".",) and not (prev == ">" and i > 1 and toks[i - 2][0] == "-"):
                    uses.append((current, t, line))
        i += 1
    return defs, uses


def files_of(paths, root):
    found = []
    for p in paths:
        full = os.path.join(root, p)
        if os.path.isdir(full):
            for d, _, names in os.walk(full):
                found += [os.path.join(d, f) for f in names if f.endswith(".c")]
        elif os.path.isfile(full):
            found.append(full)
        else:
            sys.exit(f"file_calls.py: {p}: no such file or directory under {root}")
    return sorted(set(found))


def cycles(graph):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
    return comps


def loop_in(comp, graph):
    """One loop through the component's first file: a shortest path back to it."""
    start, members = comp[0], set(comp)
    prev, queue = {start: None}, [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--order", action="store_true", help="print the files bottom first when there is no loop")
    ap.add_argument("paths", nargs="*", default=["core/agent", "core/chan"])
    args = ap.parse_args()
    files = files_of(args.paths, args.root)
    if not files:
        print("file_calls.py: no .c files found", file=sys.stderr)
        return 2
    rel = {f: os.path.relpath(f, args.root) for f in files}
    scanned = {rel[f]: scan(f) for f in files}
    definers = {}
    for f, (defs, _) in scanned.items():
        for name, static in defs.items():
            if not static:
                definers.setdefault(name, set()).add(f)
    graph = {f: set() for f in scanned}
    why = {}
    for f, (defs, uses) in scanned.items():
        for fn, name, line in uses:
            if name in defs:
                continue
            for g in definers.get(name, ()):
                if g != f:
                    graph[f].add(g)
                    why.setdefault((f, g), f"{f}:{line} {fn}() uses {name}() of {g}")
    comps = cycles(graph)
    if comps:
        for comp in comps:
            loop = loop_in(comp, graph)
            print(f"LOOP among {len(comp)} files: " + " -> ".join(loop))
            for a, b in zip(loop, loop[1:]):
                print("  " + why[(a, b)])
        return 1
    print(f"no loop: {len(files)} files, {sum(len(v) for v in graph.values())} file-to-file call edges")
    if args.order:
        done, order = set(), []

        def visit(v):
            if v in done:
                return
            done.add(v)
            for w in sorted(graph[v]):
                visit(w)
            order.append(v)

        for v in sorted(graph):
            visit(v)
        for v in order:
            print(f"  {v} -> {', '.join(sorted(graph[v])) or '(nothing here)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
