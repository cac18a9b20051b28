#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A closed pipe (`rdmatool walk | head -1`) is a normal end for every command: exit 0 (or 141,
# killed by SIGPIPE) and nothing on stderr; never a guess at "a full disk".
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() { # what rc stderr-file
	case $2 in 0 | 141) ;; *) fail "$1: exit $2: $(cat "$3")" ;; esac
	[ ! -s "$3" ] || fail "$1: printed on stderr: $(cat "$3")"
}

# The bar's form: the reader takes one line and leaves while walk still has its report to print.
set +e
"$RDMATOOL" walk --duration 1 --seed 1 2>"$tmp/err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
check "walk | head -1" "$rc" "$tmp/err"

# A reader that is gone before the first byte: walk ignores SIGPIPE (its sockets), so every write is EPIPE.
for form in "walk --duration 1 --seed 1" "-j walk --duration 1 --seed 1" "-q devices" "-q -j devices" \
	"--help" "bench --help" "walk --help" "--version" "bench -q write_lat -n 5"; do
	set +e
	# shellcheck disable=SC2086
	{ sleep 0.3; "$RDMATOOL" $form 2>"$tmp/err"; echo $? >"$tmp/rc"; } | true
	set -e
	check "rdmatool $form | (closed)" "$(cat "$tmp/rc")" "$tmp/err"
done

# A command that prints until stopped stops when its reader has gone (with a deadline, not forever).
set +e
mkdir "$tmp/stats"
# No process publishes there: after its header cqstat prints nothing, and must notice all the same.
RDMATOOL_STATS_DIR=$tmp/stats timeout 20 "$RDMATOOL" -q cqstat -i 0.1 2>"$tmp/err" | head -1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
check "cqstat -i 0.1 | head -1" "$rc" "$tmp/err"
echo ok
