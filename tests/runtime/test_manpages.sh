# The man pages are generated from the programs' own --help (help2man, CMakeLists.txt), so
# they cannot drift from it: every option spmono's parser accepts is in spmono --help and in
# spmono(1), with the sections --help lacks; spdump(1) has spdump's commands and options.
source "$SRCDIR/lib.sh"
man=$(dirname "$SPMONO")/../man
# The roff text, without its escapes (\- for -, \fB...\fR for fonts).
page () { zcat "$man/$1.1.gz" | sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\,//g' -e 's/\\\///g'; }
for p in spmono spdump; do [ -s "$man/$p.1.gz" ] || fail "no $p(1) in $man"; done
page spmono > spmono.txt; page spdump > spdump.txt
"$SPMONO" --help > help.txt || fail "spmono --help exits $?"
options=$(grep -o 'SP_IS ("--sp-[a-z-]*")' "$SRCDIR/../../mono/spersist/sp-options.c" | sed 's/.*"\(--sp-[a-z-]*\)".*/\1/')
[ "$(echo "$options" | wc -l)" -ge 10 ] || fail "found only these options in the parser: $options"
for o in $options; do
	grep -q -- "$o" help.txt || fail "spmono --help lacks $o"
	grep -q -- "$o" spmono.txt || fail "spmono(1) lacks $o"
done
for s in "SH ENVIRONMENT" SPMONO_STORE MONO_ENV_OPTIONS '"EXIT STATUS"' "SH FILES" '"SEE ALSO"'; do
	grep -q -- "$s" spmono.txt || fail "spmono(1) lacks $s"
done
version=$(sed -n 's/^#define SPMONO_VERSION "\(.*\)"/\1/p' "$SRCDIR/../../mono/spersist/sp-version.h")
grep -q "^.TH SPMONO \"1\" .* \"spmono $version\"" spmono.txt || fail "spmono(1) is not of version $version: $(head -3 spmono.txt)"
for s in list show dump verify --seq --json --all --help --version pmem:FILE 'SS "Exit status:"'; do
	grep -q -- "$s" spdump.txt || fail "spdump(1) lacks $s"
done
# The exit statuses spmono(1) states, as the runtime really gives them.
printf 'class P { static int Main () { return 7; } }' > p.cs && "$MCS" -nologo -out:p.exe p.cs || fail "compiling p.exe"
rc=0; "$SPMONO" p.exe || rc=$?; [ "$rc" = 7 ] || fail "the program's own status: $rc"
rc=0; "$SPMONO" --sp-pause=abc p.exe 2> err.txt || rc=$?
[ "$rc" = 1 ] && grep -q -- "--sp-pause" err.txt || fail "a wrong option: exit $rc, $(cat err.txt)"
rc=0; "$SPMONO" nowhere.exe 2> /dev/null || rc=$?; [ "$rc" = 2 ] || fail "an assembly that cannot be opened: exit $rc"
echo "man pages: $(echo $options | wc -w) persistence options in spmono(1), spdump(1) whole"
