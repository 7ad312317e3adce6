# Delta snapshots (--sp-delta=on), stop-the-world mode (and incremental, part 10): a chain of deltas on a
# full snapshot restores exactly (Delta.cs rebuilds the expected state and
# compares object by object); the first snapshot after a restart is a delta
# on the restored chain; kill -9 at random instants restores a consistent
# state not older than the last durable one; a damaged delta falls back to
# the chain before it; a store through a ref no barrier names is not lost;
# a pmem store is refused by name.  With a small --sp-delta-ratio, chains are
# folded by the fold task (no full snapshot from the program after its
# first), the store holds a folded base and a few deltas, restarts and kill -9
# during folds restore exactly, and objects the program dropped are let go by
# a full snapshot once they outgrow the ratio; a fold that meets a full disk
# is said once and changes nothing but that new bases are full snapshots again;
# folds that fall behind make the next snapshot full, said once.
source "$SRCDIR/lib.sh"
compile delta.exe "$SRCDIR/Delta.cs"
DELTA=(--sp-store=store --sp-delta=on --sp-verbose)

# kill_trials PREV LABEL SLEEP_MS OPTS...: kill -9 a run of delta.exe at random instants, KILL_TRIALS times, every
# other trial with folds (--sp-delta-ratio=5, SLEEP_MS between periods); every restore must be exact and not older
# than the last period the trial before saw durable (PREV for the first).
kill_trials () {
	local prev=$1 label=$2 sleep_ms=$3; shift 3
	local t opts pid restored last
	for t in $(seq "${KILL_TRIALS:-12}"); do
		opts=("$@")
		[ $((t % 2)) -eq 1 ] && opts+=(--sp-delta-ratio=5)
		"$SPMONO" "${opts[@]}" delta.exe run 1000000 $((t % 2 * sleep_ms)) ${KILL_MODE:-} > kill.$t 2>&1 &
		pid=$!
		for i in $(seq 300); do grep -q "^durable" kill.$t && break; sleep 0.05; done
		sleep "0.$(printf '%03d' $((RANDOM % 300)))"
		kill -9 $pid; wait $pid 2>/dev/null || true
		grep -q "CHECK FAILED" kill.$t && fail "${label}trial $t: inconsistent restore: $(grep -m3 CHECK kill.$t)"
		restored=$(sed -n 's/^restored //p' kill.$t)
		[ -n "$restored" ] || fail "${label}trial $t: not restored: $(head -c 3000 kill.$t)"
		[ "$restored" -ge "$prev" ] || fail "${label}trial $t restored $restored, but $prev was durable"
		last=$(sed -n 's/^durable //p' kill.$t | tail -1)
		prev=${last:-$restored}
	done
}

# chain_and_restart LABEL PERIODS MIN_DELTAS MORE OPTS...: (1) a chain of PERIODS snapshots from an
# empty store, the first full, at least MIN_DELTAS deltas, each far smaller than it; (2) a restart
# restores it exactly, and its first snapshot is a delta on it; MORE periods later the chain restores.
chain_and_restart () {
	local label=$1 periods=$2 min_deltas=$3 more=$4; shift 4
	"$SPMONO" "$@" delta.exe run "$periods" > run1.out 2>&1 || fail "${label}run: $(tail -5 run1.out)"
	grep -q "^spmono: snapshot 1:" run1.out || fail "${label}the first snapshot is not full: $(grep '^spmono: ' run1.out | head -5)"
	local deltas full biggest first
	deltas=$(grep -c "^spmono: delta " run1.out || true)
	[ "$deltas" -ge "$min_deltas" ] || fail "${label}only $deltas of $periods snapshots were deltas: $(grep '^spmono: [ds]' run1.out)"
	full=$(sed -n 's/^spmono: snapshot 1: [0-9]* objects, \([0-9]*\) bytes.*/\1/p' run1.out)
	biggest=$(sed -n 's/^spmono: delta [0-9]*: [0-9]* objects, \([0-9]*\) bytes.*/\1/p' run1.out | sort -n | tail -1)
	[ "$biggest" -lt $((full / 10)) ] || fail "${label}a delta of $biggest bytes against a full snapshot of $full"
	echo "${label}$periods periods: $deltas deltas, the largest $biggest bytes, the full snapshot $full"
	"$SPMONO" "$@" delta.exe run $((periods + more)) > run2.out 2>&1 || fail "${label}second run: $(tail -5 run2.out)"
	grep -q "^restored $periods$" run2.out || fail "${label}not restored at $periods: $(head -5 run2.out)"
	first=$(grep -m1 "^spmono: \(delta\|snapshot\) " run2.out)
	case "$first" in "spmono: delta $((periods + 1)):"*) ;; *) fail "${label}the first snapshot after the restart is not a delta: $first" ;; esac
	"$SPMONO" "$@" delta.exe check > check.out 2>&1 || fail "${label}check: $(tail -5 check.out)"
	grep -q "^restored $((periods + more))$" check.out || fail "${label}check did not restore $((periods + more)): $(cat check.out)"
}

# 1-2. A chain, and a restart on it.
chain_and_restart "" 20 10 5 "${DELTA[@]}"

# 3. Folding: with the ratio at 5%, the fold task gives the chain new bases; the program writes none.
#    (SPMONO_TEST_FOLD_SYNC: SendPData waits for a fold under way, so that a loaded machine, which
#    starves the fold task, does not turn folds into full snapshots here.)
export SPMONO_TEST_FOLD_SYNC=1
FOLDING=(--sp-store=store --sp-delta=on --sp-delta-ratio=5 --sp-verbose)
"$SPMONO" "${FOLDING[@]}" delta.exe run 70 10 > fold.out 2>&1 || fail "folding run: $(tail -5 fold.out)"
grep -q "^restored 25$" fold.out || fail "folding run did not restore 25: $(head -5 fold.out)"
folds=$(sed -n 's/^full snapshots 0, folds \([0-9]*\)$/\1/p' fold.out)
[ -n "$folds" ] && [ "$folds" -ge 3 ] || fail "expected folds and no full snapshot: $(grep -e '^full snapshots' -e '^spmono: ' fold.out | tail -8)"
"$SPDUMP" list store > list.out || fail "spdump list: $(cat list.out)"
grep -q "full (folded chain)" list.out || fail "no folded snapshot in the store: $(cat list.out)"
"$SPDUMP" show store > show.out || fail "spdump show: $(cat show.out)"
grep -q "^chain: full snapshot [0-9]* (folded" show.out || fail "spdump show does not say the chain starts at a fold: $(head -3 show.out)"
files=$(ls store/snap-*.spm | wc -l)
[ "$files" -le 30 ] || fail "the store holds $files snapshots after folding: $(cat list.out)"
"$SPDUMP" verify store > verify.out || fail "spdump verify after folding: $(cat verify.out)"
"$SPMONO" "${FOLDING[@]}" delta.exe check > check.out 2>&1 || fail "check after folding: $(tail -5 check.out)"
grep -q "^restored 70$" check.out || fail "check did not restore 70 after folding: $(cat check.out)"
echo "45 periods 10 ms apart at --sp-delta-ratio=5: $folds folds, no full snapshot, $files files in the store"
# The newest folded snapshot damaged: the chain before it (kept, --sp-keep=2) restores, as spdump says.
fold=$("$SPDUMP" list store | awk '/full \(folded chain\)/ {print $1; exit}')
printf '\xff' | dd of="store/snap-$(printf '%020d' "$fold").spm" bs=1 seek=200 conv=notrunc 2>/dev/null
want=$("$SPDUMP" show store | sed -n 's/^snapshot \([0-9]*\):.*/\1/p')
[ -n "$want" ] && [ "$want" -lt "$fold" ] || fail "spdump's newest valid chain after damaging fold $fold: '$want'"
"$SPMONO" "${FOLDING[@]}" delta.exe check > damagedfold.out 2>&1 || fail "check after damaging fold $fold: $(tail -5 damagedfold.out)"
grep -q "skipping damaged snapshot" damagedfold.out || fail "no warning for the damaged fold: $(cat damagedfold.out)"
grep -q "^restored $want$" damagedfold.out || fail "expected period $want after damaging fold $fold: $(cat damagedfold.out)"

# 4. Periods 71-90 drop 2,000 cells each: once the dropped objects outgrow the ratio of those still
#    reached, the program writes a full snapshot, which lets them go.
DROPPING=(--sp-store=store --sp-delta=on --sp-delta-ratio=20 --sp-verbose)
"$SPMONO" "${DROPPING[@]}" delta.exe run 90 10 > drop.out 2>&1 || fail "dropping run: $(tail -5 drop.out)"
grep -q "dropped outgrew" drop.out || fail "no full snapshot for the dropped objects: $(grep -e '^spmono: chain' -e '^full' drop.out)"
grep -q "^full snapshots [1-9]" drop.out || fail "no full snapshot written: $(grep '^full' drop.out)"
"$SPMONO" "${DROPPING[@]}" delta.exe check > check.out 2>&1 || fail "check after dropping: $(tail -5 check.out)"
grep -q "^restored 90$" check.out || fail "check did not restore 90: $(cat check.out)"

# 5. A fold that meets a full disk: said once (without --sp-verbose), the chain before it stays, its
#    file goes, and its chain's new base is a full snapshot (folds are tried again on the next chain,
#    and fail again here); the program loses nothing.
rm -rf store
echo fold-enospc > control
LD_PRELOAD="$SPFAULTS" SPFAULTS_CONTROL="$PWD/control" "$SPMONO" --sp-store=store --sp-delta=on --sp-delta-ratio=5 \
	delta.exe run 40 10 > foldfail.out 2>&1 \
	|| fail "run with failing folds: $(tail -5 foldfail.out)"
grep -q "warning: folding delta chain .* failed (.*No space left on device" foldfail.out \
	|| fail "no warning for the failed fold: $(grep -v '^spmono: delta' foldfail.out | tail -5)"
[ "$(grep -c 'warning: folding' foldfail.out)" -eq 1 ] || fail "the failed fold was not said once: $(grep 'warning' foldfail.out)"
grep -Eq "^full snapshots ([2-9]|[1-9][0-9]+), folds 0$" foldfail.out || fail "no full snapshot after the failed fold: $(grep '^full' foldfail.out)"
[ -z "$(ls store | grep '\.fold$')" ] || fail "a failed fold left its file: $(ls store)"
rm -f control
"$SPMONO" "${FOLDING[@]}" delta.exe check > check.out 2>&1 || fail "check after a failed fold: $(tail -5 check.out)"
grep -q "^restored 40$" check.out || fail "check did not restore 40 after a failed fold: $(cat check.out)"
# 5b. Folds that fall behind (SPMONO_TEST_FOLD_STALL: the fold task takes a fold and never does it):
#     once the chain passes 4 times the ratio beyond it, the next snapshot is full, and the user is
#     told why, once, without --sp-verbose; in both modes; the state restores.
for m in stw incremental; do
	rm -rf store
	env -u SPMONO_TEST_FOLD_SYNC SPMONO_TEST_FOLD_STALL=1 "$SPMONO" --sp-store=store --sp-delta=on --sp-delta-ratio=5 --sp-mode=$m --sp-busy=wait \
		delta.exe run 60 > behind.out 2>&1 || fail "$m: run with folds stalled: $(tail -5 behind.out)"
	grep -q "warning: the fold task fell behind: .*--sp-delta-ratio=5%.* so the next snapshot is full" behind.out \
		|| fail "$m: no warning that folds fell behind: $(grep -v '^spmono: delta' behind.out | tail -5)"
	[ "$(grep -c 'fold task fell behind' behind.out)" -eq 1 ] || fail "$m: folds behind not said once: $(grep -c 'fell behind' behind.out)"
	grep -Eq "^full snapshots ([2-9]|[1-9][0-9]+), folds 0$" behind.out || fail "$m: no full snapshot with folds behind: $(grep '^full' behind.out)"
	"$SPMONO" --sp-store=store --sp-delta=on delta.exe check > check.out 2>&1 || fail "$m: check after folds behind: $(tail -5 check.out)"
	grep -q "^restored 60$" check.out || fail "$m: check did not restore 60 after folds behind: $(cat check.out)"
done
echo "folds stalled: a full snapshot once the chain is 4 times the ratio past them, said once, in both modes"

rm -rf store
"$SPMONO" "${DELTA[@]}" delta.exe run 90 > /dev/null 2>&1 || fail "run to 90 before the kill trials"

# 6. kill -9 at random instants (every other trial while folds run): every restore is consistent
#    and not older than the last durable period.
kill_trials 90 "" 5 "${DELTA[@]}"
"$SPMONO" "${DELTA[@]}" delta.exe check > final.out 2>&1 || fail "final check: $(tail -5 final.out)"
echo "kill -9 ${KILL_TRIALS:-12} times: every restore exact, none older than the last durable period"

# 7. A damaged newest snapshot: the chain before it restores, with a warning naming it.
newest=$(ls store/snap-*.spm | tail -1)
n=$(sed -n 's/^restored //p' final.out)
printf '\xff' | dd of="$newest" bs=1 seek=100 conv=notrunc 2>/dev/null
"$SPMONO" "${DELTA[@]}" delta.exe check > damaged.out 2>&1 || fail "check after damage: $(tail -5 damaged.out)"
grep -q "skipping damaged snapshot" damaged.out || fail "no warning for the damaged snapshot: $(cat damaged.out)"
grep -q "^restored $((n - 1))$" damaged.out || fail "expected period $((n - 1)) after damaging $newest: $(cat damaged.out)"

# 8. A store through a ref taken before SendPData lands in the next snapshot (in either mode), and so do
#    stores into an array made while SendPData writes, which do not wait for it.
for m in stw incremental; do
	rm -rf store
	"$SPMONO" "${DELTA[@]}" --sp-mode=$m --sp-busy=wait delta.exe run 3 > /dev/null 2>&1 || fail "$m: run before unseen"
	"$SPMONO" "${DELTA[@]}" --sp-mode=$m --sp-busy=wait delta.exe unseen > unseen.out 2>&1 || fail "$m: unseen: $(tail -5 unseen.out)"
	grep -q "^small\[5\] 4242$" unseen.out || fail "$m: the store did not happen: $(cat unseen.out)"
	"$SPMONO" "${DELTA[@]}" delta.exe peek > peek.out 2>&1 || fail "$m: peek: $(tail -5 peek.out)"
	grep -q "^small\[5\] 4242$" peek.out || fail "$m: the store through a ref was lost: $(cat peek.out unseen.out)"
	# Stores into an object without an identity slot while SendPData writes: not waiting for it, and not lost.
	rm -rf store
	"$SPMONO" "${DELTA[@]}" --sp-mode=$m --sp-busy=wait delta.exe run 3 > /dev/null 2>&1 || fail "$m: run before busy"
	"$SPMONO" "${DELTA[@]}" --sp-mode=$m --sp-busy=wait delta.exe busy > busy.out 2>&1 || fail "$m: busy: $(tail -5 busy.out)"
	"$SPMONO" "${DELTA[@]}" delta.exe peek > peek.out 2>&1 || fail "$m: peek after busy: $(tail -5 peek.out)"
	want=$(sed -n 's/^small-sum //p' busy.out)
	[ -n "$want" ] && grep -q "^small-sum $want$" peek.out || fail "$m: stores made while a snapshot was written were lost: $(cat busy.out peek.out)"
	if [ $m = stw ]; then
		deferred=$(sed -n 's/^deferred //p' busy.out)
		[ "${deferred:-0}" -gt 0 ] || fail "stw: no store was put aside while SendPData wrote (the test did not test it): $(cat busy.out)"
	fi
done

# 10. Incremental mode: delta cycles, each period's changes made while the cycle before is written
#     (its barriers write what the delta holds first, and record every store for the next delta).
rm -rf store
INC=(--sp-store=store --sp-delta=on --sp-verbose --sp-mode=incremental --sp-busy=wait --sp-pause=200 --sp-period=1000)
chain_and_restart "incremental: " 30 20 10 "${INC[@]}" --sp-stats
# The stores made while cycles ran met them: barriers wrote what the deltas held before those stores.
by_barriers=$(sed -n 's/.* objects (\([0-9]*\) by barriers.*/\1/p' run1.out | awk '{ s += $1 } END { print s + 0 }')
[ "$by_barriers" -gt 0 ] || fail "incremental: no barrier wrote an object of a delta: $(grep 'spmono: cycle' run1.out | head -3)"
echo "incremental: $by_barriers objects written by barriers before the program's stores"
# The program's own log, met by barriers and reached by no record: set aside, an empty record, its LID let go.
aside=$(sed -n 's/.* \([0-9]*\) arrays set aside and not reached.*/\1/p' run1.out | awk '{ s += $1 } END { print s + 0 }')
[ "$aside" -gt 0 ] || fail "incremental: the program's own log was never set aside: $(grep 'spmono: cycle' run1.out | head -3)"
"$SPMONO" "${INC[@]}" --sp-delta-ratio=5 delta.exe run 70 > inc3.out 2>&1 || fail "incremental folding run: $(tail -5 inc3.out)"
grep -q "^restored 40$" inc3.out || fail "incremental folding run did not restore 40: $(head -5 inc3.out)"
folds=$(sed -n 's/^full snapshots 0, folds \([0-9]*\)$/\1/p' inc3.out)
[ -n "$folds" ] && [ "$folds" -ge 2 ] || fail "incremental: expected folds and no full snapshot: $(grep -e '^full snapshots' -e 'folded' inc3.out | tail -5)"
"$SPDUMP" verify store > verify.out || fail "spdump verify after incremental deltas: $(cat verify.out)"
"$SPMONO" "${INC[@]}" delta.exe check > check.out 2>&1 || fail "incremental check: $(tail -5 check.out)"
grep -q "^restored 70$" check.out || fail "incremental check did not restore 70: $(cat check.out)"
# Two threads store at once while cycles run (each in its half of the state), and objects move: small
# nurseries, the concurrent collector; every chain restores exactly.  (A new thread's first allocations
# are not recognised as young: barriers write some of them, String.Concat's arrays of boxed ints among
# them, which the chain must carry without failing for them.)
rm -rf store
upto=0
for params in "nursery-size=64k" "major=marksweep-conc,nursery-size=256k"; do
	upto=$((upto + 30))
	MONO_GC_PARAMS=$params "$SPMONO" "${INC[@]}" delta.exe run $upto 0 threads > gc.out 2>&1 \
		|| fail "incremental deltas, two threads, MONO_GC_PARAMS=$params: $(grep -v '^durable' gc.out | tail -5)"
done
"$SPMONO" "${INC[@]}" delta.exe check > check.out 2>&1 || fail "check after two threads and collections: $(tail -5 check.out)"
grep -q "^restored 60$" check.out || fail "check after two threads and collections did not restore 60: $(cat check.out)"
# kill -9 during delta cycles (and folds, every other trial), two threads storing
kill_trials 60 "incremental " 3 "${INC[@]}"
"$SPMONO" "${INC[@]}" delta.exe check > final.out 2>&1 || fail "incremental final check: $(tail -5 final.out)"
echo "incremental: restart, folds and kill -9 ${KILL_TRIALS:-12} times: every restore exact"
# kill -9 while deltas start before the commit of the snapshot they apply to (pipelined: the writer
# fills in its checksum): every restore exact, and no older than the last period known durable.
rm -f kill.*
KILL_MODE=pipelined kill_trials "$(sed -n 's/^restored //p' final.out)" "incremental, pipelined " 0 "${INC[@]}"
pipelined=$(cat kill.* | grep -c "starts while snapshot [0-9]* commits" || true)
[ "$pipelined" -gt 0 ] || fail "incremental, pipelined: no delta started while the one before committed"
"$SPDUMP" verify store > verify.out || fail "spdump verify after pipelined deltas and kill -9: $(cat verify.out)"
echo "incremental: $pipelined deltas started before the commit before them, kill -9 ${KILL_TRIALS:-12} times: every restore exact"

# 11. Most of the state changed every period (bench/DeltaBench.cs: 100,000 cells, every one drawn a
#     period, about 63,000 distinct): deltas all the same, in either mode, each smaller than the full
#     snapshot before them (a delta costs less than a full snapshot however much changed: its objects
#     are written in LID order); the state restores.  The chain passes --sp-delta-ratio at its first
#     delta: deltas go on while the fold task catches up, three at least before folds could be behind.
compile deltabench.exe "$SRCDIR/../../bench/DeltaBench.cs" "$SRCDIR/../../bench/Affinity.cs"
for mode in stw incremental; do
	rm -rf store
	"$SPMONO" --sp-store=store --sp-mode=$mode --sp-busy=wait --sp-delta=on --sp-verbose deltabench.exe 100000 1000000 4 \
		> churn.out 2>&1 || fail "$mode, most of the state changed: $(tail -5 churn.out)"
	full=$(grep -c "^spmono: snapshot " churn.out || true)
	deltas=$(grep -c "^spmono: delta " churn.out || true)
	[ "$deltas" -ge 3 ] && [ $((full + deltas)) -eq 5 ] || fail "$mode, most of the state changed: $full full snapshots and $deltas deltas, not 3 deltas or more of 5"
	full_bytes=$(sed -n 's/^spmono: snapshot 1: [0-9]* objects, \([0-9]*\) bytes.*/\1/p' churn.out)
	delta_bytes=$(sed -n 's/^spmono: delta 2: [0-9]* objects, \([0-9]*\) bytes.*/\1/p' churn.out)
	[ -n "$delta_bytes" ] && [ "$delta_bytes" -lt "$full_bytes" ] || fail "$mode, most changed: a delta of $delta_bytes bytes, the full snapshot $full_bytes"
	"$SPMONO" --sp-store=store --sp-delta=on deltabench.exe check 100000 1000000 4 || fail "$mode, most changed: not restored"
	# No instant clears the last snapshot's taken marks (every thread stopped): its end did (SPMONO_TRACE's
	# "taken-left").  300,000 cells: an incremental cycle whose writer took its last chunk before the hand-over
	# had cleared them ended there, and left most of them to the next instant (2 of 6 here, before the fix).
	rm -rf store
	SPMONO_TRACE=churn.trace "$SPMONO" --sp-store=store --sp-mode=$mode --sp-busy=wait --sp-delta=on deltabench.exe 300000 1000000 6 \
		> /dev/null 2>&1 || fail "$mode, most changed, traced: failed"
	grep -q "^start\|^delta-take" churn.trace || fail "$mode: no instant in the trace"
	! grep -q "^taken-left" churn.trace || fail "$mode: $(grep -c '^taken-left' churn.trace) instants cleared the last snapshot's taken marks"
	# ... and after a full snapshot forced by folds behind (stalled), the next is a delta again: a program
	# that changed most of its state during a long full cycle is not held in full snapshots for good.
	rm -rf store
	env -u SPMONO_TEST_FOLD_SYNC SPMONO_TEST_FOLD_STALL=1 "$SPMONO" --sp-store=store --sp-mode=$mode --sp-busy=wait --sp-delta=on \
		--sp-delta-ratio=5 --sp-verbose deltabench.exe 100000 1000000 6 > churn.out 2>&1 || fail "$mode, most changed, folds stalled: $(tail -5 churn.out)"
	grep -E "^spmono: (snapshot|delta) " churn.out | grep -A1 "^spmono: snapshot [2-9]:" | grep -q "^spmono: delta " \
		|| fail "$mode, most changed: no delta after a full snapshot forced by folds behind: $(grep '^spmono: [sd]' churn.out)"
done

# 9. Bad combinations are refused by name.
expect_fail "needs a file store" "$SPMONO" --sp-store=pmem:$PWD/p.pmem --sp-delta=on delta.exe run 1
expect_fail "sp-delta takes on or off" "$SPMONO" --sp-delta=yes delta.exe run 1
echo ok
