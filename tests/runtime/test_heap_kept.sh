# --sp-heap=keep (runtime patch 0015): memory the heap has populated stays the
# process's, so making garbage again and decoding a snapshot again fault in far
# fewer pages than with the default (return), and the resident size stays up
# after the garbage is collected.  Counted by the program from /proc/self/stat.
source "$SRCDIR/lib.sh"
compile heap.exe "$SRCDIR/HeapKept.cs"
spm --sp-store=store heap.exe write 300000 || fail "writing the state"
spm --sp-store=store heap.exe measure 300000 > returned.txt || fail "measuring with the heap returned"
spm --sp-store=store --sp-heap=keep heap.exe measure 300000 > kept.txt || fail "measuring with the heap kept"
spm --sp-store=store --sp-heap=return heap.exe measure 300000 > return-named.txt || fail "--sp-heap=return"
echo "returned: $(tr '\n' ' ' < returned.txt)"
echo "kept:     $(tr '\n' ' ' < kept.txt)"
value () { sed -n "s/^$1 //p" "$2"; }
for key in decode_faults remake_faults rss_after_kb; do
	[ -n "$(value $key returned.txt)" ] && [ -n "$(value $key kept.txt)" ] || fail "no $key printed"
done
# A second decode of 300,000 nodes (about 14 MB) takes blocks SGen kept: a tenth of the faults at most.
[ $(( $(value decode_faults kept.txt) * 10 )) -lt "$(value decode_faults returned.txt)" ] \
	|| fail "a decode into a kept heap faulted in as much as into a returned one"
[ $(( $(value remake_faults kept.txt) * 3 )) -lt $(( $(value remake_faults returned.txt) * 2 )) ] \
	|| fail "making garbage again in a kept heap faulted in as much as in a returned one"
[ "$(value rss_after_kb kept.txt)" -gt $(( $(value rss_after_kb returned.txt) * 3 / 2 )) ] \
	|| fail "the kept heap's resident size fell like the returned one's"
# --sp-heap=return is the default, spelled out.
[ $(( $(value decode_faults kept.txt) * 10 )) -lt "$(value decode_faults return-named.txt)" ] \
	|| fail "--sp-heap=return kept the heap"
expect_fail "--sp-heap takes keep .* or return" spm --sp-heap=yes heap.exe measure 1
expect_fail "--sp-heap takes keep .* or return" spm --sp-heap heap.exe measure 1
