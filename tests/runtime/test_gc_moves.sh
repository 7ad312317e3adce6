# Object identity survives the GC moving objects during SendPData (small nursery,
# forced collections from another thread), and the restore is exact.
source "$SRCDIR/lib.sh"
compile gc.exe "$SRCDIR/GcStress.cs"
for params in "nursery-size=64m" "nursery-size=32m,major=marksweep-conc" "nursery-size=64k" ""; do
  for suspend in preemptive hybrid; do
	rm -rf store; export MONO_THREADS_SUSPEND=$suspend
	MONO_GC_PARAMS=$params spm --sp-store=store gc.exe write > written.txt || fail "write with MONO_GC_PARAMS=$params"
	MONO_GC_PARAMS=$params spm --sp-store=store gc.exe check > restored.txt || fail "check with MONO_GC_PARAMS=$params"
	diff written.txt restored.txt || fail "restored graph differs (MONO_GC_PARAMS=$params)"
	echo "MONO_GC_PARAMS=$params MONO_THREADS_SUSPEND=$suspend: $(cat written.txt)"
  done
done
# A restore of 1,000,000 vertices runs no major collection (runtime patch 0011); 500,000
# ran one without it.
unset MONO_GC_PARAMS MONO_THREADS_SUSPEND
rm -rf store
spm --sp-store=store gc.exe bulk-write 1000000 || fail "bulk write"
spm --sp-store=store gc.exe bulk-check 1000000 || fail "a large restore ran a major collection, or restored another graph"
