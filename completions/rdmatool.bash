# bash completion for rdmatool
# Each command's options are listed once, in _rdmatool_options; the CLI
# consistency test compares these lists with --help and the man pages.

_rdmatool_options()
{
	case "$1" in
	rdmatool) echo "-j --json -p --pretty -v --verbose -q --quiet --version -h --help" ;;
	devices) echo "" ;;
	cqstat) echo "-c --comm -i --interval -n --count -d --details --clean" ;;
	madstress) echo "-t --time -C --ca -P --port -N --local-depth -n --dest-depth -T --timeout -r --retries -m --method -p --workers -L --lids -D --dr-path -c --count -v --decode" ;;
	bench) echo "-s --size -a --all -n --iters -D --duration --threads --stripes --lock --progress-thread --device --server --client --rounds --baseline" ;;
	agent) echo "--rank --hosts --hostfile --mode --timeout -n --count --out --capacity --bytes --max-msg" ;;
	walk) echo "-c --clients -d --duration -m --multinode -D --device -P --port -g --gid-index -n --steps -s --seed -w --weight --preset -H --history --history-file -V --verify --allow-outstanding-ops" ;;
	esac
}

_rdmatool_commands()
{
	rdmatool --help 2>/dev/null | awk '/^Commands:/{on=1;next} on&&!NF{exit} on{print $1}'
}

_rdmatool()
{
	local cur cmd i
	cur=${COMP_WORDS[COMP_CWORD]}
	cmd=""
	case "${COMP_WORDS[0]##*/}" in
	rdmatool-*) cmd=${COMP_WORDS[0]##*/rdmatool-} ; cmd=${cmd#rdmatool-} ;;
	esac
	for ((i = 1; i < COMP_CWORD; i++)); do
		case "${COMP_WORDS[i]}" in
		-*) ;;
		*) [ -z "$cmd" ] && cmd=${COMP_WORDS[i]} ;;
		esac
	done
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
	mapfile -t COMPREPLY < <(compgen -W "$(_rdmatool_options "$cmd") --help" -- "$cur")
}

complete -F _rdmatool rdmatool
complete -F _rdmatool rdmatool-devices
complete -F _rdmatool rdmatool-cqstat
complete -F _rdmatool rdmatool-madstress
complete -F _rdmatool rdmatool-bench
complete -F _rdmatool rdmatool-walk
complete -F _rdmatool rdmatool-agent
