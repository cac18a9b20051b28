# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bash completion for rdmatool and its rdmatool-<command> links.
# The candidates come from the binary itself (`rdmatool __complete WORD...`,
# generated from its option tables), so they cannot drift from --help.

# bash splits "--lock=s" into "--lock" "=" "s" (COMP_WORDBREAKS); rdmatool
# sees one word.  Joins the pieces back, as the program will get them, from
# COMP_LINE: _rdmatool_words (the caller's local) gets the words up to the
# cursor, the last being the one completed.
_rdmatool_join_words()
{
	local line=${COMP_LINE:0:COMP_POINT} i w
	_rdmatool_words=()
	for ((i = 0; i <= COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $line =~ ^[[:space:]]+ ]]; then
			line=${line#"${BASH_REMATCH[0]}"}
			_rdmatool_words+=("")
		elif [ $i -eq 0 ]; then
			_rdmatool_words+=("")
		fi
		# The word under the cursor may be longer than what precedes the cursor.
		[ $i -eq "$COMP_CWORD" ] && w=${w:0:${#line}}
		line=${line#"$w"}
		_rdmatool_words[${#_rdmatool_words[@]} - 1]+=$w
	done
}

_rdmatool()
{
	local cur prog pre reply=() directive value vpre c _rdmatool_words
	_rdmatool_join_words
	cur=${_rdmatool_words[${#_rdmatool_words[@]} - 1]}
	prog=${_rdmatool_words[0]/#\~/$HOME}
	mapfile -t reply < <("$prog" __complete "${_rdmatool_words[@]}" 2>/dev/null)
	# What bash will replace: the part of the joined word from the last break on.
	pre=${cur%"${COMP_WORDS[COMP_CWORD]}"}
	[ "${COMP_WORDS[COMP_CWORD]}" = "=" ] && pre=$cur
	directive=${reply[0]-}
	case $directive in
	:files | :dirs | :commands)
		value=$cur vpre=""
		if [[ $cur == --*=* ]]; then
			vpre=${cur%%=*}= value=${cur#*=}
		fi
		case $directive in
		:files) mapfile -t reply < <(compgen -f -- "$value") ;;
		:dirs) mapfile -t reply < <(compgen -d -- "$value") ;;
		:commands) mapfile -t reply < <(compgen -c -- "$value") ;;
		esac
		[ "$directive" = :commands ] || compopt -o filenames 2>/dev/null
		for c in "${!reply[@]}"; do reply[c]=$vpre${reply[c]}; done
		;;
	esac
	COMPREPLY=()
	for c in "${reply[@]}"; do
		COMPREPLY+=("${c#"$pre"}")
		[[ $c == *= ]] && compopt -o nospace 2>/dev/null
	done
	return 0
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
