# The examples/ControlLoop demo: kill -9 mid-run, restart warm from the last persisted period.
source "$SRCDIR/lib.sh"
compile loop.exe "$SRCDIR/../../examples/ControlLoop.cs"
expect_out "^cold start" spm --sp-store=store loop.exe 3 0
expect_out "warm restart: resuming after period 3 " spm --sp-store=store loop.exe 2 0

"$SPMONO" --sp-store=store loop.exe 1000000 1 > run.out 2>&1 &
pid=$!
for i in $(seq 100); do [ "$(grep -c persisted run.out)" -ge 20 ] && break; sleep 0.05; done
kill -9 $pid; wait $pid 2>/dev/null || true
last=$(grep persisted run.out | tail -1 | awk '{print $2}')
[ -n "$last" ] || fail "the loop printed no period: $(cat run.out)"
out=$(spm --sp-store=store loop.exe 1 0) || fail "restart after kill -9: $out"
resumed=$(echo "$out" | sed -n 's/^warm restart: resuming after period \([0-9]*\) .*/\1/p')
[ -n "$resumed" ] || fail "no warm restart after kill -9: $out"
# Period `last` was reported persisted, so it is durable; at most one more may have committed before the kill.
[ "$resumed" -ge "$last" ] && [ "$resumed" -le $((last + 1)) ] || fail "resumed after $resumed, last persisted was $last"
echo "killed after period $last, resumed after $resumed"
