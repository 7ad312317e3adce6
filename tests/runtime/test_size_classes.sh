# Slot sizes (runtime patch 0017): an object of 72 to 120 bytes takes a slot of
# its own size in the old generation (upstream: 80, 96 or 128 bytes), a
# persistent class's instances with their identity slot included.  Seen from
# the program: GC.GetTotalMemory's growth over 200,000 promoted objects.
source "$SRCDIR/lib.sh"
compile sizes.exe "$SRCDIR/SizeClasses.cs"
spm sizes.exe > sizes.txt || fail "measuring the slots"
cat sizes.txt
[ "$(wc -l < sizes.txt)" -eq 6 ] || fail "expected six classes measured"
# Each line: class, object bytes, slot bytes per object (to a tenth: other allocations are a few KB over 200,000 objects).
awk '{ if ($3 < $2 || $3 > $2 + 0.5) { print "FAIL: " $1 " of " $2 " bytes takes " $3 " bytes a slot"; bad = 1 } }
     END { exit bad }' sizes.txt >&2 || fail "objects took larger slots than their size"
