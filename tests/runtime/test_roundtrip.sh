# Every supported kind of field, sharing and cycles, across a process restart.
source "$SRCDIR/lib.sh"
compile rt.exe "$SRCDIR/RoundTrip.cs"
spm --sp-store=store rt.exe write > written.txt || fail "write run"
[ -s written.txt ] || fail "empty dump"
ls store/snap-*.spm > /dev/null || fail "no snapshot file in the store"
spm --sp-store=store rt.exe check > restored.txt || fail "check run"
diff -u written.txt restored.txt || fail "restored graph differs from the persisted one"
echo "round trip ok: $(wc -c < written.txt) bytes of dump, $(stat -c %s store/snap-*.spm) bytes of snapshot"
