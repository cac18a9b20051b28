#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# madstress refuses bad input with one line naming the fix (exit 2), and
# says how to use ibsim when there is no umad device (exit 1).
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }

expect() { # expect STATUS PATTERN ARGS...
	local want=$1 pattern=$2 out rc
	shift 2
	set +e
	out=$("$RDMATOOL" madstress "$@" 2>&1 >/dev/null)
	rc=$?
	set -e
	[ $rc -eq "$want" ] || fail "madstress $*: exit $rc, want $want ($out)"
	echo "$out" | grep -q -- "$pattern" || fail "madstress $*: message '$out' lacks '$pattern'"
	[ "$(echo "$out" | wc -l)" -eq 1 ] || fail "madstress $*: more than one line: $out"
}

expect 2 "missing <attr>" -L 1
expect 2 "bad attribute 'NoSuchAttr'" -L 1 NoSuchAttr
expect 2 "bad attribute '0x10000'" -L 1 0x10000
expect 2 "bad attribute modifier 'zz'" -L 1 0x11 zz
expect 2 "unexpected argument 'extra'" -L 1 0x11 0 extra
expect 2 "give LIDs like 2,4-9" -L 2,x 0x11
expect 2 "write it as 4-9" -L 9-4 0x11
expect 2 "not a unicast LID" -L 0 0x11
expect 2 "not a unicast LID" -L 50000 0x11
expect 2 "must start at 0" -D 1,2 0x11
expect 2 "not an exit port" -D 0,300 0x11
expect 2 "with -L <lids>" 0x11
expect 2 "not both" -L 1 -D 0,1 0x11
# smpdump's positional destination: LIDs, or a directed route from 0.
expect 2 "give LIDs like 2,4-9" 2,x NodeInfo
expect 2 "must start at 0" -D 1,2 NodeInfo
expect 2 "bad attribute modifier 'zz'" 4 NodeInfo zz
expect 2 "unexpected argument 'extra'" 4 NodeInfo 0 extra
expect 2 "-N 4 is less than -n 8" -N 4 -n 8 -L 1 0x11
expect 2 "-N 1 is less than -p 2" -N 1 -n 1 -p 2 -L 1 0x11
expect 2 "-m put" -m put -L 1 0x11
expect 2 "-t 0" -t 0 -L 1 0x11
expect 2 "-T 0" -T 0 -L 1 0x11
expect 2 "-r -1" -r -1 -L 1 0x11
expect 2 "-c -5" -c -5 -L 1 0x11
expect 2 -- "--bogus" --bogus -L 1 0x11

# --help lists every option.
"$RDMATOOL" madstress --help | grep -q -- '--dr-path=PATH' || fail "--help"

# No umad device here (the kernel has no RDMA; no umad2sim preloaded).
if [ ! -d /sys/class/infiniband_mad ]; then
	expect 1 "no umad device.*libumad2sim.so" -m get -L 1 0x11
	expect 1 "no umad device.*libumad2sim.so" -m get 4 NodeInfo
	expect 1 "no umad device.*libumad2sim.so" -m get 0,1 NodeInfo
fi
echo ok
