# List<T> in persistent fields: persisted and restored whole (items, sharing,
# a working list), in stop-the-world mode and in incremental mode while the
# program changes the lists through List's and Dictionary's methods during
# each cycle (every barrier mode guards the class library's stores); a
# dictionary keyed by objects or with its own comparer is refused with the
# field and the type named.
source "$SRCDIR/lib.sh"
compile coll.exe "$SRCDIR/Collections.cs"
spm --sp-store=stw coll.exe write 500 2 > write.txt || fail "write, stop-the-world: $(cat write.txt)"
expect_out "generation 2 restored exactly" spm --sp-store=stw coll.exe check 500 2
# The class library's methods are guarded in every barrier mode: the
# program's calls of them come from a method none of the modes selects.
for barrier in marking marking-v2 annotating; do
	spm --sp-store=inc-$barrier --sp-mode=incremental --sp-pause=50 --sp-period=500 --sp-barrier=$barrier \
		coll.exe write 2000 3 > write.txt || fail "write, --sp-barrier=$barrier: $(cat write.txt)"
	cat write.txt
	expect_out "generation 3 restored exactly" spm --sp-store=inc-$barrier coll.exe check 2000 3
done
# Stores of the program's own that marking-v2 does not guard tear the
# snapshot, and the check sees it (the test can tell).
spm --sp-store=v2 --sp-mode=incremental --sp-pause=50 --sp-period=500 --sp-barrier=marking-v2 coll.exe write-unguarded 2000 3 > write.txt \
	|| fail "write-unguarded, marking-v2: $(cat write.txt)"
expect_fail "CHECK FAILED" spm --sp-store=v2 coll.exe check 2000 3
expect_out "dictionary refused" spm --sp-store=dict coll.exe dictionary
expect_out "dictionary refused" spm --sp-store=dict2 --sp-mode=incremental coll.exe dictionary
echo "lists persist exactly"
