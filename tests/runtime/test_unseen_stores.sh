# Stores through pointers the JIT could not tie to an object (a ref, Span or
# fixed pointer taken before SendPData and used during the cycle; a span made
# by new Span<T>(array)) never tear a snapshot silently.  Into a large object
# the address barrier finds the object and writes it first: the snapshot is
# exact.  Into any other it logs them and the cycle refuses a record they may
# have changed (WaitPersisted throws; the snapshot before stays the
# restart's).  Pointers made during the cycle, and stores into objects
# already written, refuse nothing.  (Unseen.cs says what each way does.)
source "$SRCDIR/lib.sh"
compile unseen.exe -unsafe "$SRCDIR/Unseen.cs"
OPTS="--sp-mode=incremental --sp-pause=100 --sp-period=1000"
write () {   # write HOW BARRIER [small]: one try, output in out.txt
	rm -rf store
	spm --sp-store=store $OPTS --sp-barrier="$2" unseen.exe write "$1" ${3:-} > out.txt 2>&1 || fail "write $1 ($2): $(cat out.txt)"
	cat out.txt
}
refused () {   # refused HOW [BARRIER]: into small arrays
	write "$1" "${2:-marking}" small
	grep -q "^REFUSED: .*no barrier saw" out.txt || fail "$1: a store through the pointer was not detected"
	spm --sp-store=store unseen.exe check 1 || fail "$1: the snapshot before the refused one is not the restart's"
}
committed () {   # committed HOW [BARRIER]: exact at generation 2
	write "$1" "${2:-marking}"
	grep -q "^COMMITTED" out.txt || fail "$1: refused, though every store was seen or went into what the cycle had written"
	spm --sp-store=store unseen.exe check 2 || fail "$1: committed torn"
}
for how in ref interlocked span span-fill span-copy struct-ref struct-copy fixed; do
	refused $how
	committed $how          # large arrays: the barrier found the object
done
refused ref-annotated annotating
committed ref-annotated annotating
for how in unused written-first; do
	committed $how
done
# new Span<T>(array) may be tied to the array inside the class library (then
# the object barrier writes it first): refused, or committed exact.
write new-span marking
if grep -q "^REFUSED" out.txt; then
	spm --sp-store=store unseen.exe check 1 || fail "new-span: refused, and the restart is not the snapshot before"
else
	spm --sp-store=store unseen.exe check 2 || fail "new-span: committed torn"
fi
# The control: annotating guards no store outside [SPersistentUpdate] methods,
# so the same ref store there is committed torn -- and the check sees it.
write ref annotating
grep -q "^COMMITTED" out.txt || fail "control: annotating was expected not to guard an unannotated store"
expect_fail "CHECK FAILED" spm --sp-store=store unseen.exe check 2
# Pointers made while the cycle runs, stored through at random: nothing refused, exact.
rm -rf store
spm --sp-store=store $OPTS unseen.exe fresh 4 || fail "fresh pointers refused a cycle"
spm --sp-store=store unseen.exe check 4 || fail "fresh pointers: torn"
# The same pinned to one CPU, with the barrier's lock contended by the SP task.
rm -rf store
taskset -c 0 "$SPMONO" --sp-store=store $OPTS --sp-barrier=marking unseen.exe write span small > out.txt 2>&1 || fail "pinned: $(cat out.txt)"
grep -q "^REFUSED: .*no barrier saw" out.txt || fail "pinned to one CPU: the store through the span was not detected"
echo "unseen stores: ok"
