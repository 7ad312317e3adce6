# List<T> in persistent fields: persisted and restored whole (items, sharing,
# a working list), in stop-the-world mode and in incremental mode while the
# program changes the lists through List's methods during each cycle (the
# marking barrier guards the class library's stores); a Dictionary<K,V> field
# is refused with the field and the type named.
source "$SRCDIR/lib.sh"
compile coll.exe "$SRCDIR/Collections.cs"
spm --sp-store=stw coll.exe write 500 2 > write.txt || fail "write, stop-the-world: $(cat write.txt)"
expect_out "generation 2 restored exactly" spm --sp-store=stw coll.exe check 500 2
spm --sp-store=inc --sp-mode=incremental --sp-pause=50 --sp-period=500 coll.exe write 2000 3 > write.txt \
	|| fail "write, incremental: $(cat write.txt)"
cat write.txt
expect_out "generation 3 restored exactly" spm --sp-store=inc coll.exe check 2000 3
# The class library's methods are guarded by marking only: under marking-v2
# the same run tears the snapshot, and the check sees it (the test can tell).
spm --sp-store=v2 --sp-mode=incremental --sp-pause=50 --sp-period=500 --sp-barrier=marking-v2 coll.exe write 2000 3 > write.txt \
	|| fail "write, marking-v2: $(cat write.txt)"
expect_fail "CHECK FAILED" spm --sp-store=v2 coll.exe check 2000 3
expect_out "dictionary refused" spm --sp-store=dict coll.exe dictionary
expect_out "dictionary refused" spm --sp-store=dict2 --sp-mode=incremental coll.exe dictionary
echo "lists persist exactly"
