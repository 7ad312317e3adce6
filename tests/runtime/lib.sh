# lib.sh: shared helpers for the runtime tests (sourced by test_*.sh).
# Environment (from CMakeLists.txt): SPMONO SPLIB MCS SRCDIR WORKDIR; cwd = WORKDIR.
set -euo pipefail

fail () { echo "FAIL: $*" >&2; exit 1; }

# compile OUT.exe SRC.cs...: a test program against SPersistence.dll (+ TestUtil.cs)
compile () {
	local out=$1; shift
	"$MCS" -debug -warnaserror -nologo -r:"$SPLIB/SPersistence.dll" -out:"$out" "$SRCDIR/TestUtil.cs" "$@" \
		|| fail "compiling $out"
}

# spm ARGS...: run spmono (in the background use "$SPMONO" itself, so that $! is its pid)
spm () { "$SPMONO" "$@"; }

# expect_fail PATTERN CMD...: CMD must exit non-zero with PATTERN (grep -E) in its output
expect_fail () {
	local pattern=$1; shift
	local out rc=0
	out=$("$@" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "expected failure of: $* (output: $out)"
	echo "$out" | grep -Eq -- "$pattern" || fail "output of '$*' lacks /$pattern/: $out"
}

# expect_out PATTERN CMD...: CMD must succeed with PATTERN in its output
expect_out () {
	local pattern=$1; shift
	local out
	out=$("$@" 2>&1) || fail "command failed: $* (output: $out)"
	echo "$out" | grep -Eq -- "$pattern" || fail "output of '$*' lacks /$pattern/: $out"
}
