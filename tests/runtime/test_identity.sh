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
# With deltas: stores into clones between snapshots (the barrier records the slot's LID unchecked
# there) and during a cycle (checked: a clone is not its unchanged original).
for mode in stw incremental; do
	rm -rf "delta-$mode"
	spm --sp-store="delta-$mode" --sp-delta=on --sp-mode="$mode" id.exe write "$mode" > /dev/null || fail "write ($mode, deltas)"
	expect_out "identity ok" spm --sp-store="delta-$mode" --sp-delta=on id.exe check
	rm -rf "late-$mode"
	spm --sp-store="late-$mode" --sp-delta=on --sp-mode="$mode" id.exe late "$mode" > /dev/null || fail "late ($mode, deltas)"
	expect_out "late clones ok" spm --sp-store="late-$mode" --sp-delta=on id.exe check-late
done
echo "identity ok in both modes"
# The program AOT-compiled by Debian's mono (its image caches class sizes
# without the slot, and stores without the barrier): spmono leaves that image
# unloaded and JIT-compiles the assembly, with the same results.
if mono --aot id.exe > aot.log 2>&1 && [ -f id.exe.so ]; then
	expect_out "layout ok" spm id.exe layout
	MONO_LOG_LEVEL=info MONO_LOG_MASK=aot spm id.exe layout 2>&1 | grep -q "id.exe.so" \
		&& fail "spmono loaded the AOT image of an assembly that defines persistent state"
	rm -rf store-aot
	spm --sp-store=store-aot --sp-mode=incremental id.exe write incremental > /dev/null || fail "write with an AOT image beside"
	expect_out "identity ok" spm --sp-store=store-aot id.exe check
	echo "an AOT image beside the program is left unloaded"
else
	echo "note: Debian's mono --aot did not run here: $(tail -1 aot.log)"
fi
