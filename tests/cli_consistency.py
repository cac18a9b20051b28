#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Checks that --help, the man page and the bash and zsh completions of
every rdmatool command list the same options, and that every man page
passes mandoc -Tlint.

Conventions it reads (documented in CONTRIBUTING part of README):
  --help      the option column: '  -c, --clients=N   text'
  man page    man/rdmatool-CMD.1 (man/rdmatool.1 for the global options):
              the line after each '.TP' names the option(s)
  completion  what the shells offer for an option word: the binary's own
              answer to `rdmatool __complete rdmatool CMD -` (both
              completions ask it); long options, and short options that
              have no long form
  scripts     completions/rdmatool.bash registers every rdmatool-CMD link
              (complete -F) and _rdmatool names each in its #compdef line;
              both ask `__complete`
-h/--help is common to all and not compared.
"""
import argparse
import os
import re
import subprocess
import sys

BUILTIN = {"-h", "--help"}
OPT = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9_-]*|-[a-zA-Z?])(?![\w-])")


def options_in(text):
    return {o for o in OPT.findall(text)} - BUILTIN


def run(rdmatool, *args):
    out = subprocess.run([rdmatool, *args], capture_output=True, text=True, timeout=30)
    return out.stdout


def commands(rdmatool):
    text = run(rdmatool, "--help")
    section = text.split("Commands:", 1)[1] if "Commands:" in text else ""
    return [line.split()[0] for line in section.splitlines()
            if line.startswith("  ") and line.strip()]


def help_options(rdmatool, cmd):
    text = run(rdmatool, "--help") if cmd == "rdmatool" else run(rdmatool, cmd, "--help")
    found = set()
    for line in text.splitlines():
        if not re.match(r"^\s+-", line):
            continue
        column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        found |= options_in(column.replace("=", " "))
    return found


def man_options(man_dir, cmd):
    path = os.path.join(man_dir, "rdmatool.1" if cmd == "rdmatool" else f"rdmatool-{cmd}.1")
    if not os.path.exists(path):
        return None
    lines = open(path, encoding="utf-8").read().splitlines()
    found = set()
    for i, line in enumerate(lines[:-1]):
        if line.strip() == ".TP":
            tag = lines[i + 1].replace("\\-", "-").replace('"', " ")
            found |= options_in(tag.replace("=", " "))
    return found


def completion_options(rdmatool, cmd):
    words = ["rdmatool", "-"] if cmd == "rdmatool" else ["rdmatool", cmd, "-"]
    return options_in(run(rdmatool, "__complete", *words).replace("=", " "))


def long_or_alone(helped_text_opts, rdmatool, cmd):
    """The options of --help the completion offers: long ones, and short ones without a long form."""
    text = run(rdmatool, "--help") if cmd == "rdmatool" else run(rdmatool, cmd, "--help")
    found = set()
    for line in text.splitlines():
        if not re.match(r"^\s+-", line):
            continue
        column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        opts = options_in(column.replace("=", " "))
        longs = {o for o in opts if o.startswith("--")}
        found |= longs or opts
    return found & helped_text_opts


def script_problems(comp_dir, cmds):
    problems = []
    bash = open(os.path.join(comp_dir, "rdmatool.bash"), encoding="utf-8").read()
    zsh = open(os.path.join(comp_dir, "_rdmatool"), encoding="utf-8").read()
    compdef = re.search(r"^#compdef (.*)$", zsh, re.M)
    compdef = compdef.group(1).split() if compdef else []
    for name, text in (("bash", bash), ("zsh", zsh)):
        if "__complete" not in text:
            problems.append(f"the {name} completion does not ask 'rdmatool __complete'")
    for cmd in cmds:
        prog = "rdmatool" if cmd == "rdmatool" else f"rdmatool-{cmd}"
        if not re.search(r"^complete -F _rdmatool " + re.escape(prog) + r"$", bash, re.M):
            problems.append(f"{cmd}: no bash completion for {prog}")
        if prog not in compdef:
            problems.append(f"{cmd}: no zsh completion for {prog}")
    return problems


def man_lint(man_dir):
    """Every page passes mandoc -Tlint without warnings or errors, and takes its .TH date and
    version from cmd/version.h (the Makefile fills @DATE@ and @VERSION@): none is typed by hand."""
    problems = []
    for name in sorted(os.listdir(man_dir)):
        if not name.endswith(".1"):
            continue
        path = os.path.join(man_dir, name)
        text = open(path, encoding="utf-8").read()
        th = next((line for line in text.splitlines() if line.startswith(".TH ")), "")
        if '"@DATE@" "rdmatool @VERSION@"' not in th:
            problems.append(f"{path}: .TH says '{th}'; write \"@DATE@\" \"rdmatool @VERSION@\" "
                            "(the Makefile fills them in from cmd/version.h)")
        text = text.replace("@DATE@", "2000-01-01").replace("@VERSION@", "0.0.0")
        out = subprocess.run(["mandoc", "-Tlint", "-W", "warning"], input=text,
                             capture_output=True, text=True, timeout=30)
        for line in (out.stdout + out.stderr).splitlines():
            problems.append(f"mandoc -Tlint: {line.replace('<stdin>', path)}")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdmatool", required=True)
    ap.add_argument("--man-dir", default="man")
    ap.add_argument("--completions-dir", default="completions")
    a = ap.parse_args()

    problems = []
    cmds = ["rdmatool"] + commands(a.rdmatool)
    if len(cmds) < 2:
        problems.append("rdmatool --help lists no commands")
    for cmd in cmds:
        helped = help_options(a.rdmatool, cmd)
        sources = {
            "man page": (man_options(a.man_dir, cmd), helped),
            "completion": (completion_options(a.rdmatool, cmd), long_or_alone(helped, a.rdmatool, cmd)),
        }
        for where, (opts, want) in sources.items():
            if opts is None:
                problems.append(f"{cmd}: no {where}")
                continue
            for o in sorted(want - opts):
                problems.append(f"{cmd}: {o} is in --help but not in the {where}")
            for o in sorted(opts - helped):
                problems.append(f"{cmd}: {o} is in the {where} but not in --help")
        print(f"{cmd}: {len(helped)} options checked")
    problems += script_problems(a.completions_dir, cmds)
    problems += man_lint(a.man_dir)
    for p in problems:
        print("MISMATCH", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
