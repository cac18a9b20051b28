# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bash completion for rdmatool
# Each command's options are listed once, in _rdmatool_options; the CLI
# consistency test compares these lists with --help and the man pages.

_rdmatool_options()
{
	case "$1" in
	rdmatool) echo "-j --json -p --pretty -v --verbose -q --quiet --version -h --help" ;;
	devices) echo "" ;;
	exec) echo "-a --addr -L --library" ;;
	cqstat) echo "-c --comm -i --interval -n --count -d --details --clean" ;;
	madstress) echo "-t --time -C --ca -P --port -N --local-depth -n --dest-depth -T --timeout -r --retries -m --method -p --workers -L --lids -D --dr-path -c --count -v --decode" ;;
	bench) echo "-s --size -a --all -n --iters -D --duration --threads --stripes --lock --progress-thread --device --server --client --rounds --baseline -R --rdma_cm" ;;
	agent) echo "--rank --hosts --hostfile --agents-per-node --bind --mode --timeout -n --count --out --capacity --bytes --max-msg" ;;
	walk) echo "-c --clients -D --duration -m --multinode -d --ib-dev --device -i --ib-port -P --port -x --gid-index -n --steps -s --seed -w --weight --preset -H --history --history-file --heartbeat -V --verify --allow-outstanding-ops" ;;
	conform) echo "-l --list -C --case -d --ib-dev -D --device -i --ib-port -P --port -x --gid-index -s --seed -r --rounds -f --format" ;;
	esac
}

_rdmatool_commands()
{
	rdmatool --help 2>/dev/null | awk '/^Commands:/{on=1;next} on&&!NF{exit} on{print $1}'
}

# Values of an option ($2) of a command ($1): words, or "@files"/"@dirs"; empty when free-form.
_rdmatool_values()
{
	case "$1:$2" in
	walk:--preset) echo "default control rdma" ;;
	walk:-m | walk:--multinode) echo "true false" ;;
	walk:--history-file) echo "@files" ;;
	conform:-f | conform:--format) echo "text tap junit" ;;
	conform:-C | conform:--case) rdmatool conform --list 2>/dev/null | awk '{print $1}' ;;
	madstress:-m | madstress:--method) echo "set get 1 2" ;;
	bench:--lock) echo "striped global both" ;;
	cqstat:-c | cqstat:--comm) echo "bench walk madstress agent" ;;
	agent:--mode) echo "immediately buffered deposited received" ;;
	agent:--hostfile) echo "@files" ;;
	agent:--agents-per-node) echo "auto 1 2 4" ;;
	agent:--out) echo "@dirs" ;;
	exec:-L | exec:--library) echo "@files" ;;
	esac
}

# Options that take a value as the next word (so that word is not a positional).
_rdmatool_takes_value()
{
	case "$1:$2" in
	*:--*=*) return 1 ;;
	walk:-[cdmDiPxnswH] | conform:-[CdDiPxsrf] | madstress:-[tCPNnTrmpLDc] | bench:-[snD] | cqstat:-[cin] | agent:-n | exec:-[aL]) return 0 ;;
	*:--all | *:--baseline | *:-R | *:--rdma_cm | *:--progress-thread | *:--verify | *:--allow-outstanding-ops | *:--details | \
		*:--clean | *:--decode | *:--help | *:--server | *:--list) return 1 ;;
	*:--*) return 0 ;;
	esac
	return 1
}

# Positional arguments of a command: $2 is the index of the one being completed (1 = first).
_rdmatool_positionals()
{
	case "$1:$2" in
	bench:1) echo "send_lat write_lat read_lat atomic_lat send_bw write_bw read_bw msg_rate ring chan_rate agent_lat agent_rate agent_bw conn_rate" ;;
	madstress:1) echo "NodeInfo PortInfo SwitchInfo LinearForwardingTable NodeDescription GUIDInfo PKeyTable SLtoVLMappingTable VLArbitrationTable NI PI SI LFT ND GI" ;;
	agent:1) echo "foreground start stop status send recv poll chan" ;;
	exec:1) echo "@commands" ;;
	esac
}

_rdmatool_reply()
{
	local words=$1 cur=$2
	case "$words" in
	@files) mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	@dirs) mapfile -t COMPREPLY < <(compgen -d -- "$cur") ;;
	@commands) mapfile -t COMPREPLY < <(compgen -c -- "$cur") ;;
	*) mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur") ;;
	esac
}

_rdmatool()
{
	local cur prev cmd="" i start=1 npos=0 values
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=""
	[ "$COMP_CWORD" -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD - 1]}
	case "${COMP_WORDS[0]##*/}" in
	rdmatool-*) cmd=${COMP_WORDS[0]##*/} cmd=${cmd#rdmatool-} ;;
	esac
	if [ -z "$cmd" ]; then
		for ((i = 1; i < COMP_CWORD; i++)); do
			case "${COMP_WORDS[i]}" in
			-*) ;;
			*) cmd=${COMP_WORDS[i]}; start=$((i + 1)); break ;;
			esac
		done
	fi
	if [ -z "$cmd" ]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "$(_rdmatool_options rdmatool)" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$(_rdmatool_commands) help" -- "$cur")
		fi
		return
	fi
	if [ "$cmd" = help ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_rdmatool_commands)" -- "$cur")
		return
	fi
	# --opt=VALUE in one word, then VALUE after an option that takes one.
	if [[ $cur == --*=* ]]; then
		values=$(_rdmatool_values "$cmd" "${cur%%=*}")
		[ -n "$values" ] && _rdmatool_reply "$values" "${cur#*=}"
		return
	fi
	if [ "$COMP_CWORD" -gt "$start" ] && [[ $prev == -* ]] && _rdmatool_takes_value "$cmd" "$prev"; then
		values=$(_rdmatool_values "$cmd" "$prev")
		[ -n "$values" ] && _rdmatool_reply "$values" "$cur"
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_rdmatool_options "$cmd") --help" -- "$cur")
		return
	fi
	# Count the positionals before the current word, skipping options and their values.
	for ((i = start; i < COMP_CWORD; i++)); do
		case "${COMP_WORDS[i]}" in
		--) [ "$cmd" = exec ] && start=$((i + 1)) ;;
		-*) _rdmatool_takes_value "$cmd" "${COMP_WORDS[i]}" && i=$((i + 1)) ;;
		*)
			npos=$((npos + 1))
			# exec: past the program's name, the program's own completion (bash-completion's).
			if [ "$cmd" = exec ]; then
				if declare -F _command_offset >/dev/null; then
					_command_offset "$i"
				else
					mapfile -t COMPREPLY < <(compgen -f -- "$cur")
				fi
				return
			fi
			;;
		esac
	done
	values=$(_rdmatool_positionals "$cmd" $((npos + 1)))
	[ -n "$values" ] && _rdmatool_reply "$values" "$cur"
}

complete -F _rdmatool rdmatool
complete -F _rdmatool rdmatool-devices
complete -F _rdmatool rdmatool-cqstat
complete -F _rdmatool rdmatool-madstress
complete -F _rdmatool rdmatool-bench
complete -F _rdmatool rdmatool-walk
complete -F _rdmatool rdmatool-agent
complete -F _rdmatool rdmatool-exec
complete -F _rdmatool rdmatool-conform
