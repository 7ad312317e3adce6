# Storage faults (ENOSPC, EIO, a short write, a failing fsync or msync),
# injected under spmono with LD_PRELOAD: the failure reaches the program and
# the statistics, the program goes on, the snapshot before stays loadable, and
# persisting works again once the fault clears.  File store in both modes; the
# pmem store (msync on tmpfs) too.
source "$SRCDIR/lib.sh"
compile faults.exe "$SRCDIR/Faults.cs"
[ -f "$SPFAULTS" ] || fail "no fault library at $SPFAULTS"
pm=$(mktemp -u /dev/shm/sp-faults.XXXXXX); trap 'rm -f "$pm"*' EXIT
faulty () { LD_PRELOAD="$SPFAULTS" SPFAULTS_CONTROL="$PWD/control" "$SPMONO" "$@"; }
# With deltas too: a failed delta ends its chain, the next snapshot is full, and the chain restores.
for delta in off on; do
for mode in stw incremental; do
	rm -rf store
	faulty --sp-store=store --sp-mode=$mode --sp-delta=$delta faults.exe run "$PWD/control" enospc,eio,short,fsync > out.txt 2>&1 \
		|| fail "$mode, deltas $delta: $(cat out.txt)"
	grep -q "faults ok" out.txt || fail "$mode, deltas $delta: $(cat out.txt)"
	expect_out "value 7" spm --sp-store=store --sp-delta=$delta faults.exe check
	# A fault at the last commit: the snapshot before it is what restarts.
	rm -rf store
	faulty --sp-store=store --sp-mode=$mode --sp-delta=$delta faults.exe fail "$PWD/control" eio > out.txt 2>&1 \
		|| fail "$mode fail, deltas $delta: $(cat out.txt)"
	expect_out "value 1" spm --sp-store=store --sp-delta=$delta faults.exe check
	[ -z "$(ls store | grep '\.tmp$')" ] || fail "$mode, deltas $delta: a failed commit left its temporary file"
done
done
# The program ends while the writer commits on a slow disk: the end waits for
# that commit (the runtime must not tear down under the SP and writer tasks),
# exits cleanly, and the restart finds it.
rm -rf store
faulty --sp-store=store --sp-mode=incremental faults.exe exit "$PWD/control" > out.txt 2>&1 || fail "exit during a commit: $(cat out.txt)"
expect_out "value 3" spm --sp-store=store faults.exe check
# Incremental deltas: a delta requested while the snapshot before it commits
# starts at once (pipelined; its writer fills in that snapshot's checksum).
# When that commit fails, the delta is not written (a chain never holds a
# delta on a snapshot not in it), WaitPersisted says so, and the next
# snapshot is full.  Either way the store restores, and verifies.
for mode in slow slow-eio; do
	rm -rf store
	faulty --sp-store=store --sp-mode=incremental --sp-delta=on --sp-verbose faults.exe pipeline "$PWD/control" $mode > out.txt 2>&1 \
		|| fail "pipelined delta, $mode: $(cat out.txt)"
	grep -q "pipeline ok" out.txt || fail "pipelined delta, $mode: $(cat out.txt)"
	grep -q "delta 4 starts while snapshot 3 commits" out.txt || fail "pipelined delta, $mode: no delta started during the commit: $(cat out.txt)"
	"$SPDUMP" verify store > verify.out || fail "pipelined delta, $mode: spdump verify: $(cat verify.out)"
	if [ $mode = slow ]; then
		expect_out "value 4" spm --sp-store=store --sp-delta=on faults.exe check
	else
		grep -q "delta 4 applies to snapshot 3, which was not committed" out.txt || fail "pipelined delta after a failed commit: $(cat out.txt)"
		grep -q "spmono: snapshot 5: .* committed" out.txt || fail "the snapshot after the failed pipeline is not full: $(cat out.txt)"
		expect_out "value 5" spm --sp-store=store --sp-delta=on faults.exe check
	fi
done
faulty --sp-store="pmem:$pm" faults.exe run "$PWD/control" fsync > out.txt 2>&1 || fail "pmem: $(cat out.txt)"
grep -q "faults ok" out.txt || fail "pmem: $(cat out.txt)"
expect_out "value 7" spm --sp-store="pmem:$pm" faults.exe check
echo "storage faults reach the program and lose nothing"
