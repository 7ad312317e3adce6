# graph-runs.sh: sourced by run-table1.sh and run-table2.sh.
# graph_runs COMMAND RUNS CSV [STORES]: RUNS processes of "GraphBench.exe
# COMMAND RUN" for stop-the-world and each barrier mode (500 us / 3 ms; the
# marking modes with --sp-passes=2, as the paper's Marking SP), for
# each of STORES ("tmpfs", the default, and/or "null"); each tmpfs run's
# snapshot is restored in a fresh process and checked against the graph at
# SendPData before its row ("config,run,<the program's row>") is appended to
# CSV.  A null-store run (nothing written: the storage's share shows) has
# nothing to check; its config is suffixed "@null".  Needs here= and build= set.
graph_runs () {
	local command=$1 runs=$2 csv=$3 stores=${4:-tmpfs}
	local work sp=$build/bin/spmono
	work=$(mktemp -d /dev/shm/spgraph.XXXXXX)
	mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$work/GraphBench.exe" "$here/GraphBench.cs"
	for run in $(seq "$runs"); do
		for config in stw annotating marking marking-v2; do
		for store in $stores; do
			local opts=()
			[ "$config" = stw ] || opts=(--sp-mode=incremental --sp-barrier="$config" --sp-pause=500 --sp-period=3000)
			# The paper's Marking SP marks the state before writing it; its Annotating SP does not.
			case $config in marking|marking-v2) opts+=(--sp-passes=2) ;; esac
			rm -rf "$work/store"
			local row at=$work/store label=$config
			[ "$store" = null ] && at=null: label=$config@null
			row=$("$sp" --sp-store="$at" "${opts[@]}" "$work/GraphBench.exe" "$command" "$run")
			if [ "$store" != null ]; then
				"$sp" --sp-store="$work/store" "$work/GraphBench.exe" check "$run" \
					|| { echo "$command, run $run, $config: check failed" >&2; rm -rf "$work"; return 1; }
			fi
			echo "$label,$run,$row" >> "$csv"
		done
		done
	done
	rm -rf "$work"
}
