# bash completion for btrace(1): commands, each command's options, and
# snapshot files (*.btrace) where a command takes one.
# shellcheck shell=bash

_btrace_opts()
{
	case $1 in
	record) echo "--snapshot -b --backend --format -o --output --size --pad
		--on -p --pid --no-ptrace --no-code --memory --accesses --keep-core
		-q --quiet -h --help" ;;
	snapshot) echo "-o --output -h --help" ;;
	report) echo "--json --calls --blocks --thread --all-threads --full
		--debug-dir --no-disk --no-debuginfod -v --verbose -h --help" ;;
	decode) echo "--insn --blocks --calls --values --last --thread --debug-dir
		--all-threads --no-disk --no-debuginfod -v --verbose -h --help" ;;
	info) echo "--json -h --help" ;;
	export) echo "-o --perf-data --timeline --last --buildid-dir --no-cache
		--use-disk --tid --chunk -f --force --lenient -q --quiet -h --help" ;;
	view) echo "-o --output -f --force --last --thread --debug-dir --no-disk
		--no-debuginfod -v --verbose -h --help" ;;
	doctor) echo "--json --sysfs-root -h --help" ;;
	calibrate) echo "-b --backend --runs --json --sysfs-root -h --help" ;;
	esac
}

_btrace()
{
	local cur prev cmd i
	COMPREPLY=()
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD - 1]}
	local commands="record snapshot report decode info export view doctor calibrate"

	if [[ $COMP_CWORD -eq 1 ]]; then
		if [[ $cur == -* ]]; then
			mapfile -t COMPREPLY < <(compgen -W "-V --version -v --verbose -h --help" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "$commands" -- "$cur")
		fi
		return
	fi
	cmd=${COMP_WORDS[1]}

	# record: after the program (or --), complete the program's words
	if [[ $cmd == record ]]; then
		for ((i = 2; i < COMP_CWORD; i++)); do
			case ${COMP_WORDS[i]} in
			--) _command_offset $((i + 1)) 2>/dev/null ||
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			    return ;;
			esac
		done
	fi

	# the argument of an option
	case $prev in
	-b|--backend)
		if [[ $cmd == calibrate ]]; then
			mapfile -t COMPREPLY < <(compgen -W "pt bts" -- "$cur")
		else
			mapfile -t COMPREPLY < <(compgen -W "auto pt bts qemu" -- "$cur")
		fi
		return ;;
	--format)
		mapfile -t COMPREPLY < <(compgen -W "pt bts" -- "$cur"); return ;;
	--on)
		mapfile -t COMPREPLY < <(compgen -W "default exit SEGV BUS ILL FPE ABRT TRAP SYS" -- "$cur")
		return ;;
	-o|--output|--perf-data|--timeline)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur"); return ;;
	--debug-dir|--buildid-dir|--sysfs-root)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur"); return ;;
	-p|--pid)
		mapfile -t COMPREPLY < <(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur")
		return ;;
	--size|--pad|--memory|--accesses|--calls|--blocks|--thread|--last|--tid|--chunk|--runs)
		return ;;
	esac

	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_btrace_opts "$cmd")" -- "$cur")
		return
	fi
	case $cmd in
	report|decode|info|export|view)
		# snapshot files, and directories to reach them
		mapfile -t COMPREPLY < <(compgen -f -X '!*.btrace' -- "$cur"; compgen -d -- "$cur")
		compopt -o filenames 2>/dev/null ;;
	snapshot)
		mapfile -t COMPREPLY < <(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur") ;;
	record)
		mapfile -t COMPREPLY < <(compgen -c -- "$cur"; compgen -f -- "$cur") ;;
	esac
}
# branchtrace: the command's name in the Debian package (blktrace has btrace)
complete -F _btrace btrace branchtrace
