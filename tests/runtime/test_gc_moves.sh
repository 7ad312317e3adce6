# Object identity survives the GC moving objects during SendPData (small nursery,
# forced collections from another thread), and the restore is exact, collections
# moving the objects while it runs too.
source "$SRCDIR/lib.sh"
during_restores=0
compile gc.exe "$SRCDIR/GcStress.cs"
for params in "nursery-size=64m" "nursery-size=32m,major=marksweep-conc" "nursery-size=64k" ""; do
  for suspend in preemptive hybrid; do
	rm -rf store; export MONO_THREADS_SUSPEND=$suspend
	MONO_GC_PARAMS=$params spm --sp-store=store gc.exe write > written.txt || fail "write with MONO_GC_PARAMS=$params"
	MONO_GC_PARAMS=$params spm --sp-store=store --sp-verbose gc.exe check > restored.txt 2> check.err || { cat check.err >&2; fail "check with MONO_GC_PARAMS=$params"; }
	cat check.err >&2
	# The vertices' references to vertices made before them are linked as the restore meets
	# them (sp-decode.c), while collections move what it made: those too must be exact.
	grep -Eq "references: [1-9][0-9]* linked" check.err || fail "no reference linked (MONO_GC_PARAMS=$params)"
	diff written.txt restored.txt || fail "restored graph differs (MONO_GC_PARAMS=$params)"
	during=$(sed -n "s/^collections forced during the program's restore: //p" check.err)
	during_restores=$((during_restores + during))
	echo "MONO_GC_PARAMS=$params MONO_THREADS_SUSPEND=$suspend: $(cat written.txt)"
  done
done
# The restore's object table is a root SGen scans: collections that move the objects
# while it is being filled must have run during some of the restores checked above.
[ "$during_restores" -gt 0 ] || fail "no collection ran during any program's restore"
echo "collections during the programs' restores, in all: $during_restores"
# A large restore runs no major collection (runtime patch 0011; 500,000 vertices ran one
# without it).  Of 2,200,000 vertices (2,420,099 objects), LIDs and references past
# 2,097,152 take four bytes, which the restore's fast paths read too (sp_varint_short).
unset MONO_GC_PARAMS MONO_THREADS_SUSPEND
rm -rf store
rm -rf bigstore
spm --sp-store=bigstore gc.exe bulk-write 2200000 || fail "bulk write"
spm --sp-store=bigstore gc.exe bulk-check 2200000 || fail "a large restore ran a major collection, or restored another graph"
rm -rf bigstore
spm --sp-store=store gc.exe bulk-write 1000000 || fail "bulk write"
# When SGen refuses a block (a concurrent collection under way, or no room), the next
# objects of the class go through the runtime's path until the restore asks again;
# SPMONO_TEST_REFUSE_BLOCKS refuses every other request, and the graph is the same.
SPMONO_TEST_REFUSE_BLOCKS=1 spm --sp-store=store --sp-verbose gc.exe bulk-check 1000000 > refused.txt 2>&1 \
	|| fail "a restore with blocks refused: $(cat refused.txt)"
grep -Eq "old generation: [1-9][0-9]* blocks taken, [1-9][0-9]* refused" refused.txt \
	|| fail "the restore took no blocks, or none was refused: $(cat refused.txt)"
# The same restore with major collections forced from another thread while it fills its
# blocks of the old generation (runtime patch 0014): each one takes the blocks back.
for suspend in preemptive hybrid; do
	MONO_THREADS_SUSPEND=$suspend spm --sp-store=store gc.exe bulk-collected 1000000 \
		|| fail "a restore under major collections (MONO_THREADS_SUSPEND=$suspend) restored another graph"
done
