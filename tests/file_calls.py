#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Which C files call which, which include which, and whether any of them do so in a loop.

Calls: every function defined in the files given is mapped to its file; every
use of a name (a call, or a function's address taken) inside a function body
or a file-scope initializer (an ops table) is an edge from its file to the
files that define that name (a static function, or a name the file defines
itself, stays inside the file).  With --data, file-scope variables count as
definitions too (a file that reads another's global depends on it).
Includes: every #include "X" that names a file given (X from --root, or next to
the including file) is an edge from the including file to it.
Neither graph may have a cycle: a loop means the files are one unit cut in
pieces, and the order the issue asks for (every call pointing down) does not hold.

  file_calls.py [--root DIR] [--order] [--data] [--edges] [--above SUB]... [--loops=fail|print] [PATH...]
PATHs are files or directories (searched recursively for *.c and *.h); the
default is core/agent and core/chan under --root (default: the current directory).
--above SUB: the files under SUB (one of the PATHs or below one) sit on top of
the rest: no other file given may call a function of SUB or include a header
of SUB (each such edge is printed as CALL UP or INCLUDE UP, and fails).
--edges: with a loop, every edge inside it is printed too, with every call.
--loops=print: loops are printed but do not fail (for a tree still being
reshaped; --above still fails).
Exit 0: no loop (with --order, the files bottom first); 1: a loop (or a
call up into an --above folder), printed with the calls or includes that
make it; 2: bad usage.
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
IDENT = re.compile(r"[A-Za-z_]\w*$")
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
TAGS = ("struct", "union", "enum")


def declared_name(prefix):
    """The name a file-scope declaration declares (tokens before its '=' or ';'), or None."""
    j = len(prefix) - 1
    while j >= 0 and prefix[j] == "]":  # array bounds
        while j >= 0 and prefix[j] != "[":
            j -= 1
        j -= 1
    if j >= 0 and IDENT.match(prefix[j]) and prefix[j] not in KEYWORDS and prefix[j] not in TAGS:
        if not (j >= 1 and prefix[j - 1] in TAGS and j == len(prefix) - 1 and len(prefix) == 2):
            return prefix[j]
    return None


def scan(path):
    """(definitions {name: (static?, "func" or "var")}, uses [(owner, name, line)]) of one file.

    An owner is the function whose body, or the file-scope variable whose
    initializer, holds the use.
    """
    text = strip(open(path, encoding="utf-8", errors="replace").read())
    toks = [(m.group(0), text.count("\n", 0, m.start()) + 1) for m in TOKEN.finditer(text)]
    defs, uses = {}, []
    depth, i, current, prefix, parens, init = 0, 0, None, [], 0, None
    while i < len(toks):
        t, line = toks[i]
        if depth == 0:
            if t == "{" and init:
                depth = 1  # a braced initializer: its names are uses of the variable
            elif t == "{":
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
                    if j > 0 and IDENT.match(prefix[j - 1]) and prefix[j - 1] not in KEYWORDS:
                        name = prefix[j - 1]
                if name:
                    defs[name] = ("static" in prefix, "func")
                    current = name
                depth = 1
                prefix = []
            elif t == ";" or t == "}":
                if t == ";" and not init and prefix and "(" not in prefix and "typedef" not in prefix \
                        and "extern" not in prefix:
                    name = declared_name(prefix)
                    if name:
                        defs[name] = ("static" in prefix, "var")
                prefix, parens, init = [], 0, None
            elif init:
                if IDENT.match(t) and t not in KEYWORDS:
                    prev = toks[i - 1][0]
                    if prev != "." and not (prev == ">" and toks[i - 2][0] == "-"):
                        uses.append((init, t, line))
            else:
                parens += (t == "(") - (t == ")")
                if t == "=" and parens == 0 and "typedef" not in prefix:
                    name = declared_name(prefix)
                    if name:
                        defs[name] = ("static" in prefix, "var")
                        init = name
                prefix.append(t)
        else:
            if t == "{":
                depth += 1
            elif t == "}":
                depth -= 1
                if depth == 0:
                    current = None
                    if not init:
                        prefix = []
            elif (current or init) and IDENT.match(t) and t not in KEYWORDS:
                prev = toks[i - 1][0] if i else ""
                if prev not in (".",) and not (prev == ">" and i > 1 and toks[i - 2][0] == "-"):
                    uses.append((current or init, t, line))
        i += 1
    return defs, uses


def includes(path, root, known):
    """[(included file, line)] of the #include "X" lines of path that name a file of known."""
    text = open(path, encoding="utf-8", errors="replace").read()
    found = []
    for m in INCLUDE.finditer(text):
        for base in (root, os.path.dirname(path)):
            target = os.path.normpath(os.path.join(base, m.group(1)))
            if target in known:
                found.append((target, text.count("\n", 0, m.start()) + 1))
                break
    return found


def files_of(paths, root):
    found = []
    for p in paths:
        full = os.path.normpath(os.path.join(root, p))
        if os.path.isdir(full):
            for d, _, names in os.walk(full):
                found += [os.path.join(d, f) for f in names if f.endswith((".c", ".h"))]
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


def print_loops(kind, graph, why, every=None):
    """Prints every loop of graph with the edges that make it (every: all edges inside it); the number of loops."""
    comps = cycles(graph)
    for comp in comps:
        loop = loop_in(comp, graph)
        print(f"{kind} among {len(comp)} files: " + " -> ".join(loop))
        for a, b in zip(loop, loop[1:]):
            print("  " + why[(a, b)])
        if len(comp) > len(loop) - 1:
            print(f"  (the loop above is one of several through: {' '.join(comp)})")
        if every is not None:
            members = set(comp)
            print(f"  every edge inside these {len(comp)} files (a <-> b: they call each other directly):")
            for a in comp:
                for b in sorted(graph[a] & members):
                    mutual = " <->" if a in graph[b] else " ->"
                    print(f"    {a}{mutual} {b}")
                    for w in every[(a, b)]:
                        print("      " + w)
    return len(comps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=".")
    ap.add_argument("--order", action="store_true", help="print the files bottom first when there is no loop")
    ap.add_argument("--data", action="store_true", help="file-scope variables count as definitions too")
    ap.add_argument("--above", action="append", default=[], metavar="SUB",
                    help="no file outside SUB may call into SUB or include a header of SUB")
    ap.add_argument("--loops", choices=("fail", "print"), default="fail",
                    help="print: report loops without failing on them")
    ap.add_argument("--edges", action="store_true", help="with a loop, print every edge inside it, every call")
    ap.add_argument("paths", nargs="*", default=["core/agent", "core/chan"])
    args = ap.parse_args()
    root = os.path.normpath(args.root)
    files = files_of(args.paths, root)
    sources = [f for f in files if f.endswith(".c")]
    if not sources:
        print("file_calls.py: no .c files found", file=sys.stderr)
        return 2
    rel = {f: os.path.relpath(f, root) for f in files}
    above = [os.path.normpath(a) for a in args.above]
    for a in above:
        if not any(r == a or r.startswith(a + "/") for r in rel.values()):
            print(f"file_calls.py: --above {a}: no file given is under it", file=sys.stderr)
            return 2

    # Calls
    scanned = {rel[f]: scan(f) for f in sources}
    definers = {}
    for f, (defs, _) in scanned.items():
        for name, (static, kind) in defs.items():
            if not static and (kind == "func" or args.data):
                definers.setdefault(name, set()).add(f)
    graph = {f: set() for f in scanned}
    why, every = {}, {}
    for f, (defs, uses) in scanned.items():
        for owner, name, line in uses:
            if name in defs:
                continue
            for g in definers.get(name, ()):
                if g != f:
                    graph[f].add(g)
                    who = owner + "()" if defs[owner][1] == "func" else owner
                    what = name + "()" if scanned[g][0][name][1] == "func" else name
                    why.setdefault((f, g), f"{f}:{line} {who} uses {what} of {g}")
                    every.setdefault((f, g), []).append(f"{f}:{line} {who} uses {what}")

    # Includes
    known = set(files)
    inc_graph = {rel[f]: set() for f in files}
    inc_why, inc_every = {}, {}
    for f in files:
        for target, line in includes(f, root, known):
            if target != f:
                inc_graph[rel[f]].add(rel[target])
                inc_why.setdefault((rel[f], rel[target]), f"{rel[f]}:{line} includes {rel[target]}")
                inc_every.setdefault((rel[f], rel[target]), []).append(f"{rel[f]}:{line} includes {rel[target]}")

    loops = print_loops("LOOP", graph, why, every if args.edges else None) + \
        print_loops("INCLUDE LOOP", inc_graph, inc_why, inc_every if args.edges else None)
    up = 0
    for a in above:
        def under(x):
            return x == a or x.startswith(a + "/")

        for kind, g, w in (("CALL UP", graph, why), ("INCLUDE UP", inc_graph, inc_why)):
            for f in sorted(g):
                for t in sorted(g[f]):
                    if under(t) and not under(f):
                        print(f"{kind} into {a}: {w[(f, t)]}")
                        up += 1
    edges = sum(len(v) for v in graph.values())
    inc_edges = sum(len(v) for v in inc_graph.values())
    if loops and args.loops == "print":
        print(f"{loops} loop(s) printed, not failed on (--loops=print): {len(sources)} .c files, "
              f"{edges} call edges, {inc_edges} include edges")
    if up:
        print(f"{up} call(s) or include(s) up into {', '.join(above)}")
    if (loops and args.loops == "fail") or up:
        return 1
    if not loops:
        print(f"no loop: {len(sources)} files, {edges} file-to-file call edges, {inc_edges} include edges"
              + (f"; nothing calls up into {', '.join(above)}" if above else ""))
    if args.order and not loops:
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
