#!/usr/bin/env zsh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Drives a real zsh completion: starts an interactive zsh in a pty (zpty),
# loads compinit with the given fpath directory, types the words given on
# the command line followed by TAB, and prints every match zsh would offer,
# one per line.  Usage: zsh_complete.zsh FPATH_DIR WORKDIR 'rdmatool walk --pr'
zmodload zsh/zpty || exit 3
fdir=$1 work=$2 line=$3
zpty z zsh -f -i
zpty -w z "PROMPT='' RPROMPT='' unsetopt zle_bracketed_paste 2>/dev/null; TERM=dumb"
zpty -w z "fpath=(${(q)fdir} \$fpath); autoload -U compinit; compinit -u -d ${(q)work}/zcompdump"
zpty -w z 'comptest_hits=()'
# Record what every compadd would add (calls that only query, -O/-A/-D, pass through).
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a h; builtin compadd -O h "$@"; comptest_hits+=($h); builtin compadd "$@"; }'
zpty -w z '_comptest_done() { print -r -- "<HITS>${(pj:\n:)comptest_hits}</HITS>"; comptest_hits=(); }'
zpty -w z '_comptest_main() { comppostfuncs=(_comptest_done); _main_complete "$@"; }'
zpty -w z 'zle -C comptest complete-word _comptest_main; bindkey "^I" comptest'
zpty -w z 'zstyle ":completion:*" list-lines 0; zstyle ":completion:*:default" list-prompt ""; LISTMAX=100000'
# The echo of this line shows <REA""DY>; only its output shows <READY>.
zpty -w z 'print "<REA""DY>"'
out=""
while true; do
	zpty -r -t z chunk 2>/dev/null || sleep 0.05
	out+=$chunk
	[[ $out == *'<READY>'* ]] && break
	(( SECONDS > 20 )) && { print -u2 "zsh did not start: $out"; exit 3; }
done
zpty -n -w z "$line"$'\t'
out=""
while true; do
	zpty -r -t z chunk 2>/dev/null || sleep 0.05
	out+=$chunk
	[[ $out == *'</HITS>'* ]] && break
	(( SECONDS > 30 )) && { print -u2 "no completion within 30 s: $out"; exit 3; }
done
zpty -d z
out=${out##*<HITS>}
out=${out%%</HITS>*}
print -r -- ${out//$'\r'/}
