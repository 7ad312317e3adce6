# Misuse of the API, unpersistable types and a failed SendPData: clear errors, nothing lost.
source "$SRCDIR/lib.sh"
compile err.exe "$SRCDIR/Errors.cs"
spm --sp-store=store err.exe misuse || fail "misuse checks"
# The failed SendPData calls left snapshot 1 (Value = 1) as the newest.
expect_out "warm=True value=1" spm --sp-store=store err.exe value
[ "$(ls store/snap-*.spm | wc -l)" -eq 1 ] || fail "failed SendPData calls must not create snapshots"

# Root ids across a restart.
spm --sp-store=ids err.exe ids-write || fail "ids-write"
expect_out "ids ok" spm --sp-store=ids err.exe ids-check

# A program that adds its root at every start, never receiving the restored one, is told once
# (its snapshot would hold one more copy of its state each restart); one that receives or
# removes the restored roots before adding another is not.
for run in 1 2 3; do
	spm --sp-store=again err.exe add-every-start 2> again.$run.err || fail "add-every-start, run $run"
done
if grep -q "did not receive" again.1.err; then fail "a cold start warned of restored roots: $(cat again.1.err)"; fi
grep -q "added 1 root(s) (id 2 first) with SPC.AddRoot, but did not receive 1 restored root(s) (id 1 first)" again.2.err ||
	fail "a warm start adding a root beside the restored one was not warned: $(cat again.2.err)"
grep -q "but did not receive 2 restored root(s) (id 1 first)" again.3.err || fail "third run: $(cat again.3.err)"
[ "$(grep -c 'did not receive' again.3.err)" -eq 1 ] || fail "the warning is said once, not at each SendPData"
[ "$("$SPDUMP" show again | grep -c -- '-> #')" -eq 3 ] || fail "the store should hold the three roots the runs added"
spm --sp-store=again err.exe receive-and-add 3 2> received.err || fail "receive-and-add"
if grep -q "did not receive" received.err; then fail "receiving or removing the restored roots warned: $(cat received.err)"; fi
