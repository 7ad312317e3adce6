# An object is one object in every snapshot: clones of persisted objects (their
# identity slot copied) are new objects; generic, derived and sequential-layout
# classes keep their identity; both modes.
source "$SRCDIR/lib.sh"
compile id.exe "$SRCDIR/Identity.cs"
expect_out "layout ok" spm id.exe layout
for mode in stw incremental; do
	rm -rf "store-$mode"
	spm --sp-store="store-$mode" --sp-mode="$mode" id.exe write "$mode" > /dev/null || fail "write ($mode)"
	expect_out "identity ok" spm --sp-store="store-$mode" id.exe check
done
echo "identity ok in both modes"
