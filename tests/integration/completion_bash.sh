#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The bash completion really completes: commands, global options, per-command options, option values,
# positionals (bench tests, madstress attributes, agent actions), files, and the rdmatool-<cmd> links.
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ln -s "$RDMATOOL" "$tmp/rdmatool"
export PATH="$tmp:$PATH"
# shellcheck source=/dev/null
source "$RDMATOOL_TOP/completions/rdmatool.bash"

complete_words() {
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMPREPLY=()
	_rdmatool
	echo "${COMPREPLY[*]}"
}
expect() { # want words...
	local want=$1 out
	shift
	out=$(complete_words "$@")
	[ "$out" = "$want" ] || { echo "FAIL: '$*<TAB>': got '$out', want '$want'" >&2; exit 1; }
}

expect devices rdmatool de
expect --json rdmatool --js
expect devices rdmatool help dev
expect --help rdmatool -j devices --he
expect "--preset" rdmatool walk --pr
expect "default control rdma" rdmatool walk --preset ""
expect "control" rdmatool walk --preset=c
expect "set get 1 2" rdmatool madstress -m ""
expect "striped global both" rdmatool bench --lock ""
expect "striped" rdmatool -j bench --lock=s
expect "send_lat send_bw" rdmatool bench -s 8 sen
expect "write_lat write_bw" rdmatool bench wr
expect "NodeInfo NodeDescription NI ND" rdmatool madstress -L 1,2 N
expect "PortInfo PKeyTable PI" rdmatool madstress -c 5 P
expect "" rdmatool madstress NodeInfo 0x
expect "foreground" rdmatool agent fore
expect "bench walk madstress agent" rdmatool cqstat -c ""
# Links: the command comes from the program name.
expect "--preset" rdmatool-walk --pr
expect "default control rdma" rdmatool-walk --preset ""
expect "send_lat send_bw" rdmatool-bench sen
# Files for --history-file.
touch "$tmp/history-one.txt"
expect "$tmp/history-one.txt" rdmatool walk --history-file "$tmp/history-o"
expect "$tmp/history-one.txt" rdmatool walk "--history-file=$tmp/history-o"
# Every link name has a completion registered.
for c in $("$RDMATOOL" --help | awk '/^Commands:/{on=1;next} on&&!NF{exit} on{print $1}'); do
	complete -p "rdmatool-$c" >/dev/null 2>&1 || { echo "FAIL: no completion for rdmatool-$c" >&2; exit 1; }
done
echo ok
