#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# --help, man pages and completions agree, and the checker notices when they do not.
set -eu
cd "$RDMATOOL_TOP"
python3 tests/cli_consistency.py --rdmatool "$RDMATOOL"

# The checker must fail when an option is only in --help: drop the first
# option entry of the global man page in a copy and expect a mismatch.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r man "$tmp/man"
awk 'BEGIN{dropped=0} /^\.TP$/ && !dropped {getline; dropped=1; next} {print}' man/rdmatool.1 >"$tmp/man/rdmatool.1"
if python3 tests/cli_consistency.py --rdmatool "$RDMATOOL" --man-dir "$tmp/man" >"$tmp/out" 2>&1; then
	echo "checker passed with an option missing from the man page" >&2
	exit 1
fi
grep -q 'in --help but not in the man page' "$tmp/out"

# ... and when a page has a lint error (a raw form feed where \f was meant, as bench.1 once had).
rm -rf "$tmp/man" && cp -r man "$tmp/man"
printf '.PP\nthe \fBrdmatool\fR \x0cBbench\x0cR command\n' >>"$tmp/man/rdmatool-bench.1"
if python3 tests/cli_consistency.py --rdmatool "$RDMATOOL" --man-dir "$tmp/man" >"$tmp/out" 2>&1; then
	echo "checker passed with a lint error in a man page" >&2
	exit 1
fi
grep -q 'mandoc -Tlint: .*rdmatool-bench.1' "$tmp/out"

# ... and when a page types its .TH date by hand instead of taking it from cmd/version.h.
rm -rf "$tmp/man" && cp -r man "$tmp/man"
sed -i '1s/"@DATE@"/"2026-11-22"/' "$tmp/man/rdmatool-walk.1"
if python3 tests/cli_consistency.py --rdmatool "$RDMATOOL" --man-dir "$tmp/man" >"$tmp/out" 2>&1; then
	echo "checker passed with a .TH date typed by hand" >&2
	exit 1
fi
grep -q 'rdmatool-walk.1: .TH says' "$tmp/out"

# ... and when the completion offers an option that --help does not (a binary whose __complete says more).
printf '#!/bin/sh\nif [ "$1" = __complete ]; then "%s" "$@"; echo --no-such-option; else exec "%s" "$@"; fi\n' \
	"$RDMATOOL" "$RDMATOOL" >"$tmp/rdmatool"
chmod +x "$tmp/rdmatool"
if python3 tests/cli_consistency.py --rdmatool "$tmp/rdmatool" >"$tmp/out" 2>&1; then
	echo "checker passed with an extra option in the completion" >&2
	exit 1
fi
grep -q -- 'devices: --no-such-option is in the completion but not in --help' "$tmp/out"

# ... and when a link has no completion registered.
cp -r completions "$tmp/comp"
sed -i '/^complete -F _rdmatool rdmatool-devices$/d' "$tmp/comp/rdmatool.bash"
if python3 tests/cli_consistency.py --rdmatool "$RDMATOOL" --completions-dir "$tmp/comp" >"$tmp/out" 2>&1; then
	echo "checker passed with a link missing from the bash completion" >&2
	exit 1
fi
grep -q -- 'no bash completion for rdmatool-devices' "$tmp/out"
echo "cli consistency: ok, and the checker catches each kind of drift"
