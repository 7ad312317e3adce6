# Generic and nested persistent classes, generic structs: persisted and restored by name.
source "$SRCDIR/lib.sh"
compile gen.exe "$SRCDIR/Generics.cs"
spm --sp-store=store gen.exe write || fail "write"
expect_out "generics ok" spm --sp-store=store gen.exe check
