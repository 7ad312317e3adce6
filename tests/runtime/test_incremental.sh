# Incremental mode: the SP task writes the snapshot in increments while two
# threads rewrite the graph through stfld and stelem (int, long, reference);
# the restored graph must be exactly the one at the instant of SendPData.
# Each barrier mode guards what it promises; where it promises nothing, the
# check sees the torn snapshot (the test can tell).
source "$SRCDIR/lib.sh"
compile inc.exe "$SRCDIR/Incremental.cs"
N=20000 G=4
run () {   # run BARRIER WHERE PASSES: write under the mode, then check with a plain restart
	rm -rf store
	spm --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 --sp-barrier="$1" --sp-passes="$3" --sp-stats \
		inc.exe write $N $G "$2" > write.txt 2> stats.txt || fail "write, --sp-barrier=$1 --sp-passes=$3, stores $2: $(cat write.txt stats.txt)"
	cat write.txt
	# The cycles really ran in increments, and barriers wrote objects.
	awk '$3 > 1 { inc++ } $7 ~ /^\(/ { gsub (/\(/, "", $7); if ($7 + 0 > 0) bar++ } END { exit !(inc > 0 && bar > 0) }' write.txt \
		|| fail "--sp-barrier=$1 --sp-passes=$3, stores $2: no cycle ran in several increments with barrier writes"
	# Two passes: every cycle marked first, in increments of its own; one pass: none did.
	awk -v passes="$3" '/^spmono: cycle/ { n++; gsub (/\(/, "", $6); if (($6 + 0 > 0) != (passes == 2)) bad++ }
		END { exit !(n > 0 && !bad) }' stats.txt || fail "--sp-passes=$3: the cycles' marking increments: $(cat stats.txt)"
}
# One pass (the default: the steps write what they find) and two (marking first).
for combo in "marking outside 1" "marking outside 2" "marking inside 1" "marking inside 2" "marking-v2 inside 1" \
	     "marking-v2 inside 2" "annotating inside 1"; do
	set -- $combo
	run "$1" "$2" "$3"
	spm --sp-store=store inc.exe check $N $G || fail "torn snapshot with --sp-barrier=$1 --sp-passes=$3, stores $2"
done
# Objects move during cycles: forced nursery and major collections throughout,
# a tiny nursery (collections in the middle of increments' neighbours), Mono's
# GC debugging checks; the snapshot stays exact.
for params in "nursery-size=64k" "major=marksweep-conc,nursery-size=256k" ""; do
	rm -rf store
	MONO_GC_PARAMS=$params spm --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 \
		inc.exe write $N $G outside gc > write.txt || fail "write with collections, MONO_GC_PARAMS=$params"
	spm --sp-store=store inc.exe check $N $G || fail "torn snapshot with collections, MONO_GC_PARAMS=$params"
done
MONO_GC_DEBUG=check-remset-consistency,verify-before-allocs=1000 spm --sp-store=store2 --sp-mode=incremental \
	--sp-pause=100 --sp-period=1000 inc.exe write 3000 2 outside gc > write.txt || fail "write under MONO_GC_DEBUG"
spm --sp-store=store2 inc.exe check 3000 2 || fail "torn snapshot under MONO_GC_DEBUG"
# Stores outside what marking-v2 and annotating guard: never silently torn.
# Either the cycle is refused (the span's Fill is class-library code, which
# every mode guards, and its address barrier logs the stores into an array
# no object barrier saw), or the snapshot is torn and the check sees it.
for barrier in marking-v2 annotating; do
	rm -rf store
	if spm --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 --sp-barrier=$barrier \
		inc.exe write $N $G outside > write.txt 2>&1; then
		expect_fail "CHECK FAILED" spm --sp-store=store inc.exe check $N $G
	else
		grep -q "no barrier saw" write.txt || fail "write, --sp-barrier=$barrier, stores outside: $(cat write.txt)"
	fi
done
# Pinned to one CPU, as in the paper's setup: the SP task, the barriers and the
# mutators take turns on it (preempting each other mid-increment), with
# collections forced throughout.
for config in "marking 1" "marking 2" "annotating 1"; do
	set -- $config
	rm -rf store
	taskset -c 0 "$SPMONO" --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 --sp-barrier=$1 --sp-passes=$2 \
		inc.exe write $N $G inside gc > write.txt || fail "write pinned to one CPU, --sp-barrier=$1 --sp-passes=$2"
	cat write.txt
	taskset -c 0 "$SPMONO" --sp-store=store inc.exe check $N $G || fail "torn snapshot pinned to one CPU, --sp-barrier=$1 --sp-passes=$2"
done
# The smallest pause target: a unit of work (a piece of a long array, a few
# objects) takes about as long as the whole increment, and every increment
# still does one, so cycles end and are exact.
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-pause=10 --sp-period=100 inc.exe write 3000 2 outside > write.txt \
	|| fail "write with --sp-pause=10"
spm --sp-store=store inc.exe check 3000 2 || fail "torn snapshot with --sp-pause=10"
# An object that cannot be persisted: the cycle's marking meets it and
# WaitPersisted names it, also for a SendPData that waited for the previous cycle.
expect_out "errors ok" spm --sp-store=errstore --sp-mode=incremental --sp-busy=wait --sp-pause=50 --sp-period=2000 inc.exe errors 20000
# --sp-busy=skip (the default): the second SendPData, during the first's cycle,
# takes no snapshot; the restart holds the first call's state.
rm -rf busystore
expect_out "busy ok" spm --sp-store=busystore --sp-mode=incremental --sp-pause=50 --sp-period=2000 inc.exe busy 20000
spm --sp-store=busystore inc.exe check 20000 1 || fail "--sp-busy=skip: the restart is not the first SendPData's state"
# Stores into one object just before and just after SendPData, in one basic
# block: the barriers after the call are kept (the JIT drops only repeats with
# no call between), so the snapshot holds the first store and not the others.
for barrier in marking annotating; do
	rm -rf aroundstore
	expect_out "around ok" spm --sp-store=aroundstore --sp-mode=incremental --sp-barrier=$barrier --sp-pause=50 --sp-period=2000 inc.exe around 20000
	spm --sp-store=aroundstore inc.exe check 20000 1 || fail "--sp-barrier=$barrier: a store right after SendPData is in the snapshot"
	# Objects allocated between two cycles are the second snapshot's, however young.
	rm -rf youngstore
	expect_out "young ok" spm --sp-store=youngstore --sp-mode=incremental --sp-barrier=$barrier --sp-pause=50 --sp-period=2000 inc.exe young 20000
	spm --sp-store=youngstore inc.exe check 20000 1 || fail "--sp-barrier=$barrier: a store into an object allocated before SendPData is in the snapshot"
done
# Stores right after SendPData make the first increment yield to the
# barriers; the SP task resumes in the same period once they stop, so the
# cycle (a few ms of work) ends well within the 1 s period.  The last
# snapshot is exact.  The stores (4 passes over 20,000 objects) take 110-150
# ms here: the period's window (the pause and a twentieth of the period)
# must hold them, so the pause is 400 ms (at 100 ms, a 150 ms window, one
# run in ten stored past it and its cycle took the next period), and an
# attempt whose stores ran past the pause is not counted (inc.exe takes the
# pause to know).  Two CI runs' cycles took 1,010 ms with stores of 28 ms:
# the cycle's last work waited for a barrier's copy of a long array, and the
# SP task left the period instead of resuming when the copy came (fixed in
# session 39; reproduced 3 runs in 5 beside two busy loops, 0 in 20 since).
# A store into a long array not written yet copies its rest outside the
# cycle's lock; the snapshot is the arrays at SendPData, whether the stores
# came at once (3 generations: the last has no delay) or once the SP task was
# part-way through them (4: the last stores after 3 ms), in every barrier mode.
for config in "marking 1" "marking 2" "annotating 1"; do
	set -- $config
	for generations in 3 4; do
		rm -rf longstore
		expect_out "longarrays ok" spm --sp-store=longstore --sp-mode=incremental --sp-barrier=$1 --sp-passes=$2 --sp-pause=100 \
			--sp-period=1000 inc.exe longarrays $generations
		expect_out "longarrays restored" spm --sp-store=longstore inc.exe longarrays-check $generations
	done
done
# Stores into the program's own objects (not state) during a cycle leave the cycle's lock alone.
rm -rf foreignstore
expect_out "foreign stores ok" spm --sp-store=foreignstore --sp-mode=incremental --sp-pause=100 --sp-period=1000 inc.exe foreign 20000
rm -rf resumestore
expect_out "resume ok" spm --sp-store=resumestore --sp-mode=incremental --sp-pause=400000 --sp-period=1000000 inc.exe resume 20000 1000000 400000
spm --sp-store=resumestore inc.exe check 20000 1 || fail "a cycle resumed after yielding is not the state at SendPData"
# The options come from MONO_ENV_OPTIONS too: the cycle runs in increments.
rm -rf store
MONO_ENV_OPTIONS="--sp-mode=incremental --sp-pause=50 --sp-period=500" spm --sp-store=store inc.exe write 5000 1 inside > write.txt \
	|| fail "write with MONO_ENV_OPTIONS: $(cat write.txt)"
awk '$1 == "generation" && $3 > 1 { ok = 1 } END { exit !ok }' write.txt || fail "MONO_ENV_OPTIONS: no increments: $(cat write.txt)"
# --sp-priority: the tasks run SCHED_FIFO at that priority when permitted (root
# here); without CAP_SYS_NICE, the highest RLIMIT_RTPRIO allows, or the default
# policy, each time with a warning saying why and what to do.
if [ "$(id -u)" = 0 ]; then
	spm --sp-store=prio --sp-mode=incremental --sp-priority=12 inc.exe priority > prio.txt 2>&1 || fail "priority: $(cat prio.txt)"
	grep -q "sp-task policy fifo rt 12" prio.txt && grep -q "sp-writer policy fifo rt 12" prio.txt \
		|| fail "--sp-priority=12 as root: $(cat prio.txt)"
	# A start runs at the tasks' priority for its instant and gives the caller its own back:
	# the normal policy, a lower real-time priority; a higher one is left alone.
	grep -q "caller policy normal rt 0" prio.txt || fail "the caller's policy after SendPData: $(cat prio.txt)"
	for caller in 5 30; do
		chrt -f $caller "$SPMONO" --sp-store=prio-$caller --sp-mode=incremental --sp-priority=12 inc.exe priority > prio.txt 2>&1 \
			|| fail "priority, caller at SCHED_FIFO $caller: $(cat prio.txt)"
		grep -q "caller policy fifo rt $caller" prio.txt && grep -q "sp-task policy fifo rt 12" prio.txt \
			|| fail "the caller's policy after SendPData, SCHED_FIFO $caller: $(cat prio.txt)"
	done
	# --sp-writer=background: the writer stays at the normal policy, the SP task does not.
	spm --sp-store=prio4 --sp-mode=incremental --sp-priority=12 --sp-writer=background inc.exe priority > prio.txt 2>&1 \
		|| fail "priority, background writer: $(cat prio.txt)"
	grep -q "sp-task policy fifo rt 12" prio.txt && grep -q "sp-writer policy normal" prio.txt \
		|| fail "--sp-writer=background: $(cat prio.txt)"
fi
# (Raising RLIMIT_RTPRIO needs CAP_SYS_RESOURCE or a hard limit of 5 or more: not every container has either.)
if [ "$(id -u)" = 0 ] && (ulimit -r 5) 2> /dev/null; then
	bash -c 'ulimit -r 5; exec setpriv --bounding-set=-sys_nice "$0" "$@"' "$SPMONO" --sp-store=prio2 --sp-mode=incremental \
		--sp-priority=12 inc.exe priority > prio.txt 2>&1 || fail "priority, RLIMIT_RTPRIO 5: $(cat prio.txt)"
	grep -q "sp-task policy fifo rt 5" prio.txt && grep -q "the highest RLIMIT_RTPRIO allows" prio.txt \
		|| fail "--sp-priority=12 with RLIMIT_RTPRIO 5: $(cat prio.txt)"
fi
without_nice=(); [ "$(id -u)" != 0 ] || without_nice=(setpriv --bounding-set=-sys_nice)
bash -c 'ulimit -r 0; exec "$@"' - "${without_nice[@]}" "$SPMONO" --sp-store=prio3 --sp-mode=incremental \
	--sp-priority=12 inc.exe priority > prio.txt 2>&1 || fail "priority refused: $(cat prio.txt)"
grep -q "sp-task policy normal" prio.txt && grep -q "cannot run with SCHED_FIFO priority 12.*default policy" prio.txt \
	|| fail "--sp-priority=12 refused: $(cat prio.txt)"
# Configurations that cannot keep the promise are refused at start, with the reason.
expect_fail "needs cooperative or hybrid thread suspension" \
	env MONO_THREADS_SUSPEND=preemptive "$SPMONO" --sp-store=store --sp-mode=incremental inc.exe write 10 1 inside
expect_fail "--sp-pause=5000 is longer than --sp-period=1000" \
	"$SPMONO" --sp-store=store --sp-mode=incremental --sp-pause=5000 --sp-period=1000 inc.exe write 10 1 inside
echo "incremental snapshots are exact under every barrier mode"
