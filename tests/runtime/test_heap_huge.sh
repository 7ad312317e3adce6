# --sp-heap=huge (sp-heap.c, runtime patch 0016): the old generation is
# mapped in 2 MB sections, aligned, which the kernel is asked to back with
# transparent huge pages (MADV_HUGEPAGE: "hg" in the mapping's VmFlags, as
# the program reads /proc/self/smaps); without it no mapping asks.  A kernel
# with huge pages off is a warning, and the state persists and restores.
source "$SRCDIR/lib.sh"
compile huge.exe "$SRCDIR/HeapHuge.cs"
thp=/sys/kernel/mm/transparent_hugepage/enabled
value () { sed -n "s/^$1 //p" "$2"; }

spm --sp-store=store huge.exe write 300000 || fail "writing the state"

# The default and --sp-heap=keep ask for no huge page.
spm --sp-store=store --sp-heap=keep huge.exe measure 300000 > kept.txt || fail "measuring with the heap kept"
echo "kept: $(tr '\n' ' ' < kept.txt)"
[ "$(value advised_kb kept.txt)" = 0 ] || fail "--sp-heap=keep asked for huge pages"

# Bad values: refused before the program runs, naming the three choices.
for bad in "=HUGE" "=huge2" "=huge,keep"; do
	expect_fail "--sp-heap takes keep .*huge .* or return" spm --sp-store=store --sp-heap$bad huge.exe measure 300000
done

# A kernel that has huge pages off: a warning naming the file and what it says; the program runs.
echo "always madvise [never]" > thp-never
out=$(SPMONO_TEST_THP_SETTING="$PWD/thp-never" spm --sp-store=store --sp-heap=huge huge.exe measure 300000 2>&1) \
	|| fail "huge pages off stopped the program: $out"
echo "$out" | grep -q "warning: --sp-heap=huge: transparent huge pages are off (.*/thp-never: always madvise \[never\])" \
	|| fail "no warning naming the setting: $out"
out=$(SPMONO_TEST_THP_SETTING="$PWD/no/such/file" spm --sp-store=store --sp-heap=huge huge.exe measure 300000 2>&1) \
	|| fail "an unreadable setting stopped the program: $out"
echo "$out" | grep -q "warning: --sp-heap=huge: cannot read .*/no/such/file" || fail "no warning for an unreadable setting: $out"

if [ ! -r "$thp" ]; then
	echo "SKIP (asked): this kernel has no transparent huge pages ($thp); the options and warnings were checked"
	exit 0
fi

# Asked: the old generation's sections (a restore of 300,000 nodes, about 17 MB, and as many made again) ask for
# huge pages, each mapping 2 MB aligned and a whole number of 2 MB long; --sp-verbose says so.
spm --sp-store=store --sp-heap=huge --sp-verbose huge.exe measure 300000 > huge.txt 2> huge.err \
	|| fail "measuring with the heap huge: $(cat huge.err)"
echo "huge: $(tr '\n' ' ' < huge.txt) (the kernel: $(cat $thp))"
[ "$(value advised_kb huge.txt)" -ge 16384 ] || fail "--sp-heap=huge asked for huge pages for less than 16 MB"
[ "$(value misaligned huge.txt)" = 0 ] || fail "a mapping that asks for huge pages is not in whole aligned 2 MB sections"
grep -q "the old generation in 2 MB sections, huge pages asked for ($thp: " huge.err \
	|| fail "--sp-verbose did not say huge pages were asked for: $(cat huge.err)"
# The state a huge heap persists restores with the default heap.
spm --sp-store=store2 --sp-heap=huge huge.exe write 1000 || fail "writing from a huge heap"
spm --sp-store=store2 huge.exe measure 1000 > back.txt || fail "restoring what a huge heap wrote"
