# A snapshot whose class changed in a way that cannot restore (a narrowing) is refused, by name.
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

# A hostile class cache: a snapshot (checksum intact) whose class names a type
# that is not [SPersistent], System.Diagnostics.Process, with the same leaves:
# refused by name, and no Process is ever created.
compile err.exe "$SRCDIR/Errors.cs"
spm --sp-store=hostile err.exe count 1 || fail "write for the hostile test"
snap=$(ls hostile/snap-*.spm)
python3 - "$snap" <<'PY' || fail "could not craft the hostile snapshot"
import sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
path = sys.argv[1]
d = bytearray(open(path, "rb").read())
name = b"\x04Good"
i = d.index(name)
asm_end = d.rindex(b"Version", 0, i)          # the class record: ... assembly:str name:str
asm_start = d.rindex(b"err,", 0, asm_end) - 1  # the assembly string's length byte
new = bytes([len(b"System")]) + b"System" + bytes([26]) + b"System.Diagnostics.Process"
d[asm_start:i + len(name)] = new
body = bytes(d[:-4])
open(path, "wb").write(body + crc32c(body).to_bytes(4, "little"))
PY
expect_out "is valid" "$SPDUMP" verify hostile
expect_fail "System.Diagnostics.Process.*(not \[SPersistent\]|cannot)" spm --sp-store=hostile err.exe value
