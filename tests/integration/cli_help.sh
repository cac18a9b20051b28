#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# One voice: every command's -h/--help is the project's own (no popt "Help options:" tail) and fails on a
# write error; bench --help lists its tests; one answer to one mistake (unknown device, mistyped command,
# a bad soft-device setting, Ctrl-C).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
pid=
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

cmds=$("$RDMATOOL" --help | awk '/^Commands:/{on=1;next} on&&!NF{exit} on{print $1}')
[ -n "$cmds" ] || fail "rdmatool --help lists no commands"
for c in $cmds; do
	"$RDMATOOL" "$c" -h >"$tmp/h" 2>"$tmp/err" || fail "'rdmatool $c -h' exit $?: $(cat "$tmp/err")"
	head -1 "$tmp/h" | grep -q "^Usage: rdmatool $c " || fail "'rdmatool $c -h' starts: $(head -1 "$tmp/h")"
	grep -q -- '^  -h, --help  *print this help and exit$' "$tmp/h" || fail "$c -h does not list -h, --help"
	! grep -q -e 'Help options' -e '--usage' -e '-?' "$tmp/h" || fail "$c -h speaks popt's voice: $(cat "$tmp/h")"
	[ ! -s "$tmp/err" ] || fail "$c -h printed on stderr: $(cat "$tmp/err")"
	"$RDMATOOL" "$c" --help | cmp -s - "$tmp/h" || fail "'$c --help' differs from '$c -h'"
	"$RDMATOOL" help "$c" | cmp -s - "$tmp/h" || fail "'help $c' differs from '$c -h'"
	awk 'length > 80' "$tmp/h" | grep -q . && fail "$c -h has lines over 80 columns: $(awk 'length > 80' "$tmp/h")"
	set +e
	"$RDMATOOL" "$c" --help >/dev/full 2>"$tmp/err"
	rc=$?
	set -e
	[ $rc -eq 1 ] && grep -q "cannot write to standard output" "$tmp/err" ||
		fail "'rdmatool $c --help >/dev/full': exit $rc: $(cat "$tmp/err")"
done
ln -s "$RDMATOOL" "$tmp/rdmatool-walk"
"$tmp/rdmatool-walk" -h | head -1 | grep -q '^Usage: rdmatool walk ' || fail "rdmatool-walk -h"

# bench --help: every test, one line each, the same list the completion offers.
"$RDMATOOL" bench --help | awk '/^Tests:/{on=1;next} on&&!NF{exit} on{print $1}' >"$tmp/tests"
[ "$(wc -l <"$tmp/tests")" -eq 16 ] || fail "bench --help lists $(wc -l <"$tmp/tests") tests, want 16"
"$RDMATOOL" __complete rdmatool bench "" | sort >"$tmp/comp"
sort "$tmp/tests" | cmp -s - "$tmp/comp" || fail "bench --help and the completion list other tests"
for t in send_lat write_bw msg_rate ring conn_rate chan_rate agent_lat shm_pingpong cma_bw; do
	grep -qx "$t" "$tmp/tests" || fail "bench --help lacks $t"
done

# A mistyped command: git's "did you mean".
set +e
out=$("$RDMATOOL" wlak 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && echo "$out" | grep -q "unknown command 'wlak'; did you mean 'walk'?" || fail "wlak: exit $rc: $out"

# An unknown device: one wording and exit 2 in walk and bench.
for form in "walk --device=nodev0 --duration 1" "bench send_lat --device=nodev0 -n 5"; do
	set +e
	# shellcheck disable=SC2086
	out=$("$RDMATOOL" $form 2>&1 >/dev/null)
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "'$form': exit $rc, want 2: $out"
	[ "$out" = "rdmatool ${form%% *}: no device 'nodev0'; 'rdmatool devices' lists them" ] ||
		fail "'$form' says: $out"
done

# A bad soft-device setting: devices says why (naming the variable) and fails.
set +e
out=$(RDMATOOL_SOFT_FAULTS=bogus "$RDMATOOL" devices 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "devices with RDMATOOL_SOFT_FAULTS=bogus: exit $rc: $out"
echo "$out" | grep -q "cannot open soft0: RDMATOOL_SOFT_FAULTS: 'bogus'" || fail "devices does not say why: $out"

# An environment variable that points nowhere is named, not only its path.
RDMATOOL_STATS_DIR=/etc/passwd "$RDMATOOL" bench send_lat -n 5 >/dev/null 2>"$tmp/err" || fail "bench: $(cat "$tmp/err")"
grep -q "RDMATOOL_STATS_DIR" "$tmp/err" || fail "bench does not name RDMATOOL_STATS_DIR: $(cat "$tmp/err")"

# bench -a sweeps every size: a --size beside it is a mistake, not ignored.
set +e
out=$("$RDMATOOL" bench -a -s 64 send_lat 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] && echo "$out" | grep -q -- "--all sweeps every size" || fail "bench -a -s 64: exit $rc: $out"

# Ctrl-C: what was measured is printed, a notice says it is partial, exit 130 (the shell's 128 + SIGINT).
# agent_bench.sh does the same for the agent's benches, which start processes of their own.
sigint_bench() { # sigint_bench TEST-AND-OPTIONS...: SIGINT once it runs, then exit 130 and the notice
	local rc=0
	"$RDMATOOL" bench "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	deadline=$((SECONDS + 30))
	until [ -e "/dev/shm/rdmatool-stats.$pid" ]; do
		[ $SECONDS -lt $deadline ] || fail "bench $* did not start: $(cat "$tmp/err")"
		sleep 0.1
	done
	sleep 0.5
	kill -INT "$pid"
	wait "$pid" || rc=$?
	pid=
	[ $rc -eq 130 ] || fail "bench $* after SIGINT: exit $rc, want 130: $(cat "$tmp/err")"
	grep -q "interrupted: the results above are partial (SIGINT)" "$tmp/err" ||
		fail "bench $*: no notice: $(cat "$tmp/err")"
}
sigint_bench send_lat -D 60
sigint_bench chan_rate -n 100000000 # it used to exit 1, "interrupted"
echo ok
