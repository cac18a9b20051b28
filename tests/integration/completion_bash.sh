#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The bash completion in a real interactive bash (in tmux): keys typed, TAB pressed, the line read back.
# bash splits "--lock=s" at '=' (COMP_WORDBREAKS), as no test that sets COMP_WORDS by hand does.
set -eu
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v tmux >/dev/null || fail "tmux is not installed; run 'make deps'"
tmp=$(mktemp -d /tmp/rdmatool-bash.XXXXXX)
sock=rdmatool-bash-$$
bench=
cleanup() {
	[ -z "$bench" ] || kill "$bench" 2>/dev/null || true
	tmux -L "$sock" kill-server 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/bin"
for n in rdmatool rdmatool-walk rdmatool-bench; do ln -s "$RDMATOOL" "$tmp/bin/$n"; done
touch "$tmp/history-one.txt"
printf '#!/bin/sh\n' >"$tmp/bin/ibv_devinfo_for_test" && chmod +x "$tmp/bin/ibv_devinfo_for_test"
{
	echo "PS1='\$ '"
	echo "HISTFILE=/dev/null"
	echo "PATH=$tmp/bin:/usr/bin:/bin"
	echo "bind 'set bell-style none'"
	echo "bind 'set completion-query-items 0'"
	echo "bind 'set page-completions off'"
	echo "source $RDMATOOL_TOP/completions/rdmatool.bash"
	echo 'n=0'
	# shellcheck disable=SC2016
	echo 'show() { n=$((n + 1)); printf "\n<L%d>%s</L>\n" "$n" "$READLINE_LINE"; READLINE_LINE=; READLINE_POINT=0; }'
	echo "bind -x '\"\\C-t\": show'"
	echo "bind '\"\\C-g\": insert-completions'"
} >"$tmp/rc"
tmux -L "$sock" new-session -d -x 300 -y 50 "env -i TERM=screen HOME=$tmp bash --norc --noprofile -i"
tmux -L "$sock" set-option -g history-limit 10000 >/dev/null
tmux -L "$sock" send-keys "source $tmp/rc" Enter
n=0

# Types $1, presses $2 (Tab: complete; C-g: insert every candidate); prints the line bash then holds.
# The caller counts the lines in n (this runs in a subshell).
line_after() {
	local got deadline=$((SECONDS + 30))
	tmux -L "$sock" send-keys -l "$1"
	tmux -L "$sock" send-keys "$2"
	tmux -L "$sock" send-keys C-t
	while :; do
		got=$(tmux -L "$sock" capture-pane -p -J -S - | sed -n "s/^<L$n>\(.*\)<\/L>\$/\1/p")
		[ -n "$got" ] && break
		[ $SECONDS -lt $deadline ] || fail "no answer from bash for '$1': $(tmux -L "$sock" capture-pane -p)"
		sleep 0.1
	done
	printf '%s\n' "$got"
}
expect() { # keys key want
	local got
	n=$((n + 1))
	got=$(line_after "$1" "$2")
	got=${got% }
	[ "$got" = "$3" ] || fail "'$1' + $2: got '$got', want '$3'"
}

expect "rdmatool wa" Tab "rdmatool walk"
expect "rdmatool --js" Tab "rdmatool --json"
expect "rdmatool help dev" Tab "rdmatool help devices"
expect "rdmatool walk --pres" Tab "rdmatool walk --preset="
expect "rdmatool bench --lock=s" Tab "rdmatool bench --lock=striped"
expect "rdmatool -j bench --lock=g" Tab "rdmatool -j bench --lock=global"
expect "rdmatool bench --lock=" C-g "rdmatool bench --lock=both global striped"
expect "rdmatool walk --preset=" C-g "rdmatool walk --preset=control default rdma"
expect "rdmatool walk --preset=c" Tab "rdmatool walk --preset=control"
expect "rdmatool walk --preset r" Tab "rdmatool walk --preset rdma"
expect "rdmatool walk -w fetch_" Tab "rdmatool walk -w fetch_add="
expect "rdmatool walk --weight=comp_" Tab "rdmatool walk --weight=comp_swap="
expect "rdmatool madstress -m " C-g "rdmatool madstress -m 1 2 get set"
expect "rdmatool bench -s 8 sen" C-g "rdmatool bench -s 8 send_bw send_lat"
expect "rdmatool madstress -L 1,2 NodeI" Tab "rdmatool madstress -L 1,2 NodeInfo"
expect "rdmatool madstress 4 PortI" Tab "rdmatool madstress 4 PortInfo"
expect "rdmatool agent fore" Tab "rdmatool agent foreground"
expect "rdmatool agent chan " C-g "rdmatool agent chan create destroy list"
expect "rdmatool agent --mode=dep" Tab "rdmatool agent --mode=deposited"
expect "rdmatool exec -- ibv_devinfo_for_t" Tab "rdmatool exec -- ibv_devinfo_for_test"
expect "rdmatool exec ibv_devinfo_for_t" Tab "rdmatool exec ibv_devinfo_for_test"
expect "rdmatool cqstat -c ben" Tab "rdmatool cqstat -c bench"
expect "rdmatool walk --history-file $tmp/history-o" Tab "rdmatool walk --history-file $tmp/history-one.txt"
expect "rdmatool walk --history-file=$tmp/history-o" Tab "rdmatool walk --history-file=$tmp/history-one.txt"
# The links: the command comes from the program's name.
expect "rdmatool-walk --pres" Tab "rdmatool-walk --preset="
expect "rdmatool-bench write_l" Tab "rdmatool-bench write_lat"

# cqstat's PIDs: those of the processes that publish stats now.
"$RDMATOOL" bench send_lat -D 60 >/dev/null 2>&1 &
bench=$!
deadline=$((SECONDS + 30))
until [ -e "/dev/shm/rdmatool-stats.$bench" ]; do
	[ $SECONDS -lt $deadline ] || fail "bench published no stats segment"
	sleep 0.1
done
n=$((n + 1))
got=$(line_after "rdmatool cqstat " C-g)
case " $got " in *" $bench "*) ;; *) fail "cqstat <TAB>: '$got' lacks the bench's pid $bench" ;; esac
kill -INT "$bench"
wait "$bench" || true
bench=
echo "bash completion: ok"
