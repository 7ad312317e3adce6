# The pmem store (--sp-store=pmem:FILE, a file mapped with libpmem; here on
# tmpfs): persisted and restored warm in both modes, spdump reads it, a second
# process is refused, a file that is not a store is refused untouched, and a
# damaged newest snapshot falls back to the one before.
source "$SRCDIR/lib.sh"
compile rt.exe "$SRCDIR/RoundTrip.cs"
compile err.exe "$SRCDIR/Errors.cs"
compile inc.exe "$SRCDIR/Incremental.cs"
pm=$(mktemp -u /dev/shm/sp-pmem-test.XXXXXX); trap 'rm -f "$pm"*' EXIT
spm --sp-store="pmem:$pm" rt.exe write > written.txt || fail "write to pmem"
spm --sp-store="pmem:$pm" rt.exe check > restored.txt || fail "restore from pmem"
diff written.txt restored.txt || fail "pmem: restored graph differs"
expect_out "snapshot 1 is valid" "$SPDUMP" verify "pmem:$pm"
# SPMONO_STORE names it too.
SPMONO_STORE="pmem:$pm" spm rt.exe check > restored.txt || fail "restore through SPMONO_STORE=pmem:"
diff written.txt restored.txt || fail "SPMONO_STORE=pmem: restored graph differs"
# Incremental mode, several cycles, exact.
spm --sp-store="pmem:$pm.inc" --sp-mode=incremental --sp-pause=100 --sp-period=1000 inc.exe write 5000 3 outside > /dev/null \
	|| fail "incremental write to pmem"
spm --sp-store="pmem:$pm.inc" inc.exe check 5000 3 || fail "incremental pmem snapshot torn"
# Newest two kept; --sp-keep beyond two is refused with the reason.
spm --sp-store="pmem:$pm.n" err.exe count 4 || fail "count"
expect_out "warm=True value=4" spm --sp-store="pmem:$pm.n" err.exe value
"$SPDUMP" list "pmem:$pm.n" > list.txt
[ "$(grep -c ' yes' list.txt)" = 2 ] || fail "pmem list: $(cat list.txt)"
expect_fail "keeps the 2 newest" spm --sp-store="pmem:$pm.n" --sp-keep=3 err.exe value
# Damage the newest snapshot's bytes (records at 64 and 128 name where they are): the one before loads.
offset=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(192); r=[struct.unpack_from("<QQ",d,o) for o in (64,128)]; print(max(r)[1] + 50)' "$pm.n")
printf '\xee' | dd of="$pm.n" bs=1 seek="$offset" conv=notrunc status=none
expect_out "warm=True value=3" spm --sp-store="pmem:$pm.n" err.exe value
# A file that is not a store: refused, untouched.
head -c 8192 /dev/urandom > "$pm.foreign"; cp "$pm.foreign" foreign.copy
expect_fail "not a spmono pmem store" spm --sp-store="pmem:$pm.foreign" err.exe value
cmp -s "$pm.foreign" foreign.copy || fail "a foreign file was changed"
echo "pmem store ok"
