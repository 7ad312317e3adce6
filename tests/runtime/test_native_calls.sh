# Native code called by P/Invoke keeps writing into its arguments while a
# cycle starts (it runs GC-safe): the start logs the arguments in flight and
# a snapshot reaching one is refused, never committed torn; an argument
# declared [In] refuses nothing.  Each mode, and pinned to one CPU.
source "$SRCDIR/lib.sh"
cp "$SPNATIVE" ./libspnative.so
export LD_LIBRARY_PATH=$PWD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
compile native.exe "$SRCDIR/Native.cs"
N=200003
run () {   # run BARRIER KIND [taskset...]
	local barrier=$1 kind=$2; shift 2
	rm -rf store
	"$@" "$SPMONO" --sp-store=store --sp-mode=incremental --sp-pause=100 --sp-period=1000 --sp-barrier="$barrier" \
		native.exe write $N 20 "$kind" > write.txt 2>&1 || fail "write, --sp-barrier=$barrier, $kind: $(cat write.txt)"
	cat write.txt
	spm --sp-store=store native.exe check $N "$kind" || fail "torn snapshot, --sp-barrier=$barrier, $kind"
}
for barrier in marking annotating marking-v2; do
	run $barrier fill
done
run marking read
run annotating ref
# A call made during a cycle from a method the mode does not select: with
# 16 MB to read, the SP task is still inside A when the native code writes it
# (before the call got the barrier in every mode, A [0] was restored as 2).
for barrier in annotating marking-v2; do
	N=4000037 run $barrier late taskset -c 0
done
run marking fill taskset -c 0
echo "native calls in flight refuse the snapshot"
