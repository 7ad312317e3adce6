# A snapshot whose class layout no longer matches the program is refused, by name.
source "$SRCDIR/lib.sh"
compile v1.exe "$SRCDIR/Layout.cs"
# The changed build has the same assembly name (v1), as a rebuilt program would.
mkdir -p new
"$MCS" -nologo -define:V2 -r:"$SPLIB/SPersistence.dll" -out:new/v1.exe "$SRCDIR/TestUtil.cs" "$SRCDIR/Layout.cs"
spm --sp-store=store v1.exe write || fail "write"
spm --sp-store=store new/v1.exe check || fail "changed layout was not refused with a clear message"
# The refused snapshot is left as it was, for the program it belongs to.
expect_out "." ls store/snap-00000000000000000001.spm

# A snapshot naming an assembly the program cannot load: a clear error, no crash.
mkdir -p other
"$MCS" -nologo -r:"$SPLIB/SPersistence.dll" -out:other/v3.exe "$SRCDIR/TestUtil.cs" "$SRCDIR/Layout.cs"
expect_fail "class Plant from assembly v1, Version=0.0.0.0 cannot be found" spm --sp-store=store other/v3.exe check
