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
