#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The seeded bugs' format (tests/mutation/run.sh describes it).

  mutation.py apply FILE.mut TREE     applies the mutation to TREE's copy of its file
  mutation.py check TREE FILE.mut...  says which mutations no longer apply to TREE, or are named
                                      after a round (h10_...) instead of what they break; writes nothing

One process for every check: starting python per mutation cost two minutes of
`make check` on this machine.  Exit status 0 when everything applied.
"""
import os
import re
import sys

# A name says what the bug breaks; a round prefix (h10_, w6_, h_) says only when it was written.
ROUND_PREFIX = re.compile(r'^[hw][0-9]*_')


def parse(mut):
    path, blocks, cur, mode = None, [], None, None
    for line in open(mut).read().split('\n'):
        if mode is None and line.startswith('#'):
            continue
        if mode is None and line.startswith('file '):
            path = line[5:].strip()
            continue
        if line == '<<<':
            cur, mode = [[], []], 0
            continue
        if line == '===' and mode == 0:
            mode = 1
            continue
        if line == '>>>' and mode == 1:
            blocks.append(cur)
            mode = None
            continue
        if mode is not None:
            cur[mode].append(line)
    if not path or not blocks:
        raise ValueError('malformed: no "file" line or no <<< === >>> block')
    return path, blocks


def mutated(mut, tree):
    """(path, new text) of mut applied to tree; ValueError says why it does not apply."""
    path, blocks = parse(mut)
    f = os.path.join(tree, path)
    if not os.path.isfile(f):
        raise ValueError("no file '%s'" % path)
    s = open(f).read()
    for old, new in blocks:
        o, n = '\n'.join(old) + '\n', '\n'.join(new) + ('\n' if new else '')
        if s.count(o) != 1:
            raise ValueError('text not found exactly once in %s:\n%s' % (path, o))
        s = s.replace(o, n)
    return f, s


def main(argv):
    if len(argv) == 4 and argv[1] == 'apply':
        try:
            f, s = mutated(argv[2], argv[3])
        except (ValueError, OSError) as e:
            print(e, file=sys.stderr)
            return 1
        open(f, 'w').write(s)
        return 0
    if len(argv) >= 3 and argv[1] == 'check':
        rc = 0
        for mut in argv[3:]:
            name = os.path.basename(mut)[:-len('.mut')]
            if ROUND_PREFIX.match(name):
                print('%s: named after the round that added it: git mv it to a name that says what '
                      'it breaks (%s.mut)' % (name, ROUND_PREFIX.sub('', name)))
                rc = 1
            try:
                mutated(mut, argv[2])
            except (ValueError, OSError) as e:
                print('%s: STALE: %s' % (name, str(e).split('\n')[0]))
                rc = 1
        return rc
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv))
