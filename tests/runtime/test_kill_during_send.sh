# kill -9 at random instants, mostly inside SendPData: the next run restores a
# consistent snapshot, never older than the last one reported durable.  For
# the file store and for the pmem store (on tmpfs; STORE=... picks one).
source "$SRCDIR/lib.sh"
compile kill.exe "$SRCDIR/KillLoop.cs"
trials=${KILL_TRIALS:-8}
for store in store "pmem:$PWD/store.pmem"; do
unset prev_durable
for t in $(seq "$trials"); do
	"$SPMONO" --sp-store="$store" kill.exe > run.$t 2>&1 &
	pid=$!
	# Wait for the first durable snapshot of this run, then a random 0-400 ms more.
	for i in $(seq 300); do grep -q durable run.$t && break; sleep 0.05; done
	sleep "0.$(printf '%03d' $((RANDOM % 400)))"
	kill -9 $pid; wait $pid 2>/dev/null || true
	grep -q "CHECK FAILED" run.$t && fail "trial $t: inconsistent restore: $(grep CHECK run.$t)"
	restored=$(sed -n 's/^restored //p' run.$t)
	[ -n "$restored" ] || fail "trial $t: did not start: $(head -5 run.$t)"
	if [ "$t" -gt 1 ]; then
		[ "$restored" -ge "$prev_durable" ] || fail "trial $t restored $restored, but $prev_durable was durable"
	fi
	prev_durable=$(sed -n 's/^durable //p' run.$t | tail -1)
	[ -n "$prev_durable" ] || prev_durable=$restored
	echo "$store, trial $t: restored $restored, last durable $prev_durable"
done
# A final clean restore verifies the last state.
"$SPMONO" --sp-store="$store" kill.exe > final.out 2>&1 &
pid=$!
for i in $(seq 300); do grep -q "restored\|CHECK" final.out && break; sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null || true
grep -q "CHECK FAILED" final.out && fail "$store: final restore inconsistent"
done
echo ok
