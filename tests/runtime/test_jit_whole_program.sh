# The barrier JIT on a whole, large program: the C# compiler (mcs.exe, with
# the class libraries it uses) runs under spmono in each barrier mode, where
# its methods get barriers, barriers leave its loops and its stelem.ref stores
# check types inline, and must compile a program to the same IL as under
# Debian's mono (ikdasm listings compared; only the module's GUID differs).
source "$SRCDIR/lib.sh"
MCS_EXE=/usr/lib/mono/4.5/mcs.exe
[ -f "$MCS_EXE" ] || fail "no $MCS_EXE (mono-devel)"
compile_with () {   # compile_with DIR RUNTIME ARGS...: Loops.cs into DIR/out.exe, listed in DIR/out.il
	local dir=$1; shift
	mkdir -p "$dir"
	"$@" "$MCS_EXE" -nologo -r:"$SPLIB/SPersistence.dll" -out:"$dir/out.exe" "$SRCDIR/TestUtil.cs" "$SRCDIR/Loops.cs" \
		|| fail "mcs under $*"
	ikdasm "$dir/out.exe" | grep -v '^// MVID' > "$dir/out.il" || fail "ikdasm of $dir/out.exe"
}
compile_with stock mono
[ "$(wc -l < stock/out.il)" -gt 1000 ] || fail "the listing is too short to compare: $(wc -l < stock/out.il) lines"
for barrier in marking annotating marking-v2; do
	SPMONO_JIT_TRACE=1 compile_with "$barrier" "$SPMONO" --sp-mode=incremental --sp-barrier=$barrier > trace.txt
	cmp -s stock/out.il "$barrier/out.il" || fail "mcs under --sp-barrier=$barrier compiled other IL: $(diff stock/out.il "$barrier/out.il" | head -5)"
done
# Under marking the compiler's own loops lost barriers (else this tested less).
SPMONO_JIT_TRACE=1 "$SPMONO" --sp-mode=incremental --sp-barrier=marking "$MCS_EXE" -nologo -r:"$SPLIB/SPersistence.dll" \
	-out:again.exe "$SRCDIR/TestUtil.cs" "$SRCDIR/Loops.cs" > trace.txt 2>&1 || fail "mcs under marking: $(cat trace.txt)"
n=$(grep -c "barrier(s) out of loops" trace.txt || true)
[ "$n" -gt 20 ] || fail "only $n methods of mcs lost barriers from loops under marking"
echo "mcs: same IL in every mode; under marking $n methods lost barriers from loops"
