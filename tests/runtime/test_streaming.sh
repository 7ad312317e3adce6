# Streaming: a snapshot reaches the store through two chunk buffers
# (--sp-buffer), in chunks as small as 4 KiB, in both modes: the same bytes
# in both (the issue's "no larger than 1.01x"), exact after a restart, with
# the process's peak memory growing by about the buffers, not the snapshot;
# a fault in the middle of a stream reaches WaitPersisted and leaves nothing
# behind; a chunk buffer smaller than a piece of a long object still works;
# the cost model's predictions and its schedulability warning; a cold first
# cycle grows the LID table without a collection.
source "$SRCDIR/lib.sh"
compile streaming.exe "$SRCDIR/Streaming.cs"
N=30000
bytes () { awk '{ print $2 }' "$1"; }
rss () { awk '{ print $6 }' "$1"; }
for buffer in 4K 1M; do
	for mode in stw incremental; do
		rm -rf store
		spm --sp-store=store --sp-mode=$mode --sp-buffer=$buffer streaming.exe persist $N > "$mode-$buffer.txt" \
			|| fail "persist, --sp-mode=$mode --sp-buffer=$buffer: $(cat "$mode-$buffer.txt")"
		cat "$mode-$buffer.txt"
		expect_out "restored version 1" spm --sp-store=store streaming.exe check $N
		"$SPDUMP" verify store > /dev/null || fail "spdump verify, --sp-mode=$mode --sp-buffer=$buffer"
	done
	stw=$(bytes stw-$buffer.txt); inc=$(bytes incremental-$buffer.txt)
	[ "$inc" -le $(( stw + stw / 100 )) ] || fail "--sp-buffer=$buffer: incremental snapshot $inc bytes, stop-the-world $stw (more than 1.01x)"
	# Whole-snapshot buffers would grow the peak by the snapshot's size or more (two of them in
	# incremental mode); chunk buffers and the per-object bookkeeping, by far less than half of it.
	for mode in stw incremental; do
		grew=$(rss $mode-$buffer.txt)
		[ "$grew" -lt $(( stw / 1024 / 3 )) ] || fail "--sp-mode=$mode --sp-buffer=$buffer: the peak RSS grew by $grew kB while persisting a $stw-byte snapshot"
	done
done
# A program storing into arrays of its own (not the state) while the cycle marks: they are set
# aside, not written, and the snapshot is the state's, as stop-the-world's (their 8 MB would be 18%).
for mode in stw incremental; do
	rm -rf store
	spm --sp-store=store --sp-mode=$mode streaming.exe logging $N > "logging-$mode.txt" \
		|| fail "logging, --sp-mode=$mode: $(cat "logging-$mode.txt")"
	cat "logging-$mode.txt"
	expect_out "restored version 1" spm --sp-store=store streaming.exe check $N
done
stw=$(bytes logging-stw.txt); inc=$(bytes logging-incremental.txt)
[ "$inc" -le $(( stw + stw / 100 )) ] || fail "a program's own arrays: incremental snapshot $inc bytes, stop-the-world $stw (more than 1.01x)"
# The writer outside the budget (--sp-writer=background): the same snapshot, and its thread at the normal policy.
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-writer=background --sp-priority=50 streaming.exe persist $N > background.txt \
	|| fail "persist, --sp-writer=background: $(cat background.txt)"
[ "$(bytes background.txt)" = "$(bytes incremental-1M.txt)" ] || fail "--sp-writer=background: $(bytes background.txt) bytes, not $(bytes incremental-1M.txt)"
expect_out "restored version 1" spm --sp-store=store streaming.exe check $N
# Mutators during the cycle, with buffers smaller than a piece of the long objects (16 KiB).
compile inc.exe "$SRCDIR/Incremental.cs"
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 --sp-buffer=4K inc.exe write 20000 2 outside > write.txt \
	|| fail "write with 4 KiB buffers: $(cat write.txt)"
spm --sp-store=store inc.exe check 20000 2 || fail "torn snapshot with 4 KiB buffers"
# A storage fault in the middle of a stream (after its first chunks are in the store).
[ -f "$SPFAULTS" ] || fail "no fault library at $SPFAULTS"
rm -rf store; : > control
LD_PRELOAD="$SPFAULTS" SPFAULTS_CONTROL="$PWD/control" "$SPMONO" --sp-store=store --sp-mode=incremental --sp-buffer=4K \
	--sp-pause=200 --sp-period=1000 streaming.exe fault $N "$PWD/store" "$PWD/control" || fail "fault mid-stream"
expect_out "restored version 3" spm --sp-store=store streaming.exe check $N
# The cost model: predictions of the order of the cycles, no warning for a paced program; one
# warning, and a count, for SendPData every millisecond against cycles of tens of milliseconds
# (after three paced cycles, and from the first call).
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-pause=200 --sp-period=1000 streaming.exe paced $N > paced.txt 2>&1 \
	|| fail "paced: $(cat paced.txt)"
cat paced.txt
! grep -q "warning" paced.txt || fail "a paced program was warned: $(cat paced.txt)"
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-pause=200 --sp-period=1000 streaming.exe rushed $N > rushed.txt 2>&1 \
	|| fail "rushed: $(cat rushed.txt)"
[ "$(grep -c "SendPData calls came while a cycle ran" rushed.txt)" = 1 ] || fail "the schedulability warning, once: $(cat rushed.txt)"
grep -q "give persistence more time (--sp-pause, --sp-period)" rushed.txt || fail "the warning says what to change"
# Rushed from the first call, every commit ending after the next cycle started: the cycles are
# still measured, predicted and judged.
rm -rf store
spm --sp-store=store --sp-mode=incremental --sp-pause=200 --sp-period=1000 streaming.exe rushed-cold 100000 > cold.txt 2>&1 \
	|| fail "rushed from the first call: $(cat cold.txt)"
[ "$(grep -c "SendPData calls came while a cycle ran" cold.txt)" = 1 ] || fail "the schedulability warning, once, rushed from the first call: $(cat cold.txt)"
# A program that never leaves the SP task its CPU (one CPU, the program at SCHED_FIFO 60 above
# the task's 50) while calling SendPData: the cycle cannot finish and is never learned from, and
# the program is told so, once, and why (needs SCHED_FIFO: root, as CI is).
if chrt -f 60 true 2> /dev/null; then
	rm -rf store
	taskset -c 0 chrt -f 60 "$SPMONO" --sp-store=store --sp-mode=incremental --sp-priority=50 --sp-pause=200 \
		--sp-period=1000 streaming.exe starved $N > starved.txt 2>&1 || fail "starved: $(cat starved.txt)"
	[ "$(grep -c "cannot finish" starved.txt)" = 1 ] || fail "the starved cycle's warning, once: $(cat starved.txt)"
	grep -q "threads above the SP task's priority (SCHED_FIFO 50) on its CPU left it almost none" starved.txt \
		|| fail "the warning says why: $(cat starved.txt)"
	expect_out "restored version 1" spm --sp-store=store streaming.exe check $N
	# The same after two cycles the model learned from: every call is late then as well, which
	# must not keep the starved cycle from being said (it did: the late test came first).
	rm -rf store
	taskset -c 0 chrt -f 60 "$SPMONO" --sp-store=store --sp-mode=incremental --sp-priority=50 --sp-pause=200 \
		--sp-period=1000 streaming.exe starved-warm $N > starved-warm.txt 2>&1 || fail "starved-warm: $(cat starved-warm.txt)"
	[ "$(grep -c "cannot finish" starved-warm.txt)" = 1 ] \
		|| fail "the starved cycle's warning, once, with a prediction learned: $(cat starved-warm.txt)"
else
	echo "skipped the starved cycle: chrt -f refused (not root?)"
fi
# A cold first cycle of 1,000,000 objects grows the LID table in its increments without a
# collection (the program allocates nothing meanwhile); before runtime patch 0012, 5 of 5 runs had one.
rm -rf store
spm --sp-store=store --sp-mode=incremental streaming.exe cold-collections 1000000 > cold-gc.txt 2>&1 \
	|| fail "cold-collections: $(cat cold-gc.txt)"
cat cold-gc.txt
grep -q "collections during the first cycle: 0 minor, 0 major" cold-gc.txt || fail "the LID table's growth collected: $(cat cold-gc.txt)"
echo "streaming ok"
