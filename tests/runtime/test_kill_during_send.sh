# kill -9 at random instants (inside SendPData, inside cycles and commits): the
# next run restores a consistent snapshot, never older than the last one
# reported durable.  For the file store and the pmem store (on tmpfs), in
# stop-the-world and incremental mode: KILL_TRIALS each (default 25, so 50 a
# store).
source "$SRCDIR/lib.sh"
compile kill.exe "$SRCDIR/KillLoop.cs"
trials=${KILL_TRIALS:-25}
pm=$(mktemp -u /dev/shm/sp-kill.XXXXXX); trap 'rm -f "$pm"*' EXIT
total=0
for store in store "pmem:$pm"; do
for mode in stw incremental; do
unset prev_durable
rm -rf store "$pm"
for t in $(seq "$trials"); do
	# Emptied here, not by the job's redirection, which may come after the grep below
	# (that would then find the "durable" of the same trial of another store or mode).
	: > run.$t
	"$SPMONO" --sp-store="$store" --sp-mode=$mode --sp-pause=200 --sp-period=1000 kill.exe > run.$t 2>&1 &
	pid=$!
	# Wait for the first durable snapshot of this run, then a random 0-400 ms more.
	for i in $(seq 300); do grep -q durable run.$t && break; sleep 0.05; done
	# Not even restored after 15 s: a thread dump first (Mono prints one on SIGQUIT), for the failure below.
	grep -q "^restored" run.$t || { kill -QUIT $pid; sleep 2; }
	sleep "0.$(printf '%03d' $((RANDOM % 400)))"
	kill -9 $pid; wait $pid 2>/dev/null || true
	grep -q "CHECK FAILED" run.$t && fail "trial $t: inconsistent restore: $(grep CHECK run.$t)"
	restored=$(sed -n 's/^restored //p' run.$t)
	[ -n "$restored" ] || fail "trial $t ($store, $mode): not restored after 15 s; its output and thread dump: $(head -c 6000 run.$t)"
	if [ "$t" -gt 1 ]; then
		[ "$restored" -ge "$prev_durable" ] || fail "trial $t restored $restored, but $prev_durable was durable"
	fi
	prev_durable=$(sed -n 's/^durable //p' run.$t | tail -1)
	[ -n "$prev_durable" ] || prev_durable=$restored
	total=$((total + 1))
done
echo "$store, $mode: $trials kills, every restore consistent and not older than the last durable snapshot"
# A final clean restore verifies the last state.
"$SPMONO" --sp-store="$store" kill.exe > final.out 2>&1 &
pid=$!
for i in $(seq 300); do grep -q "restored\|CHECK" final.out && break; sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null || true
grep -q "CHECK FAILED" final.out && fail "$store: final restore inconsistent"
done
done
echo "ok: $total kills"
