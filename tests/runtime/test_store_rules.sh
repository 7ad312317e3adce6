# The store: keep N, one process at a time, damaged snapshots skipped, locations.
source "$SRCDIR/lib.sh"
compile err.exe "$SRCDIR/Errors.cs"

# Keep N (default 2, and --sp-keep).
spm --sp-store=k2 err.exe count 5
[ "$(ls k2/snap-*.spm | wc -l)" -eq 2 ] || fail "default keep is 2: $(ls k2)"
spm --sp-store=k3 --sp-keep=3 err.exe count 5
[ "$(ls k3/snap-*.spm | wc -l)" -eq 3 ] || fail "--sp-keep=3: $(ls k3)"
expect_out "warm=True value=5" spm --sp-store=k3 err.exe value

# A damaged newest snapshot is skipped with a warning; the one before is loaded.
newest=$(ls k3/snap-*.spm | tail -1)
printf '\xff' | dd of="$newest" bs=1 seek=60 conv=notrunc status=none
out=$(spm --sp-store=k3 err.exe value 2>&1) || fail "run with damaged newest: $out"
echo "$out" | grep -q "warning: skipping damaged snapshot 5" || fail "no warning for damaged snapshot: $out"
echo "$out" | grep -q "warm=True value=4" || fail "did not fall back to snapshot 4: $out"

# All snapshots damaged (truncated): a cold start, with warnings.
for f in k2/snap-*.spm; do truncate -s 10 "$f"; done
out=$(spm --sp-store=k2 err.exe count 1 2>&1) || fail "cold start over damaged store: $out"
echo "$out" | grep -q "skipping damaged snapshot" || fail "no warning: $out"

# One process at a time.
"$SPMONO" --sp-store=held err.exe hold 3000 > hold.out &
holder=$!
for i in $(seq 50); do grep -q holding hold.out 2>/dev/null && break; sleep 0.1; done
expect_fail "in use by another process \\(pid $holder\\)" spm --sp-store=held err.exe value
wait $holder

# Locations: option, MONO_ENV_OPTIONS, SPMONO_STORE, default next to the program.
MONO_ENV_OPTIONS=--sp-store=viaenvopt spm err.exe count 1
[ -d viaenvopt ] || fail "MONO_ENV_OPTIONS --sp-store ignored"
SPMONO_STORE=viavar spm err.exe count 1
[ -d viavar ] || fail "SPMONO_STORE ignored"
SPMONO_STORE=viavar spm --sp-store=optwins err.exe count 1
[ -d optwins ] || fail "--sp-store must win over SPMONO_STORE"
mkdir -p app && cp err.exe app/
spm app/err.exe count 1
[ -d app/err.spstore ] || fail "default store next to the program: $(ls app)"
touch afile
expect_fail "afile" spm --sp-store=afile/sub err.exe count 1

# Options: errors are clear, and --help lists them.
expect_fail "--sp-keep takes a whole number" spm --sp-keep=0 err.exe value
expect_fail "unknown persistence option '--sp-bogus'" spm --sp-bogus err.exe value
expect_fail "--sp-store needs a location" spm --sp-store= err.exe value
expect_out "--sp-store=LOCATION" spm --help

# A program that does not use persistence runs as under mono, and leaves no store behind.
mkdir -p plain && cat > plain/Hello.cs <<'CS'
class Hello { static int Main (string[] a) { System.Console.WriteLine ("hello " + a.Length + " " + typeof (object).Assembly.Location); return 3; } }
CS
"$MCS" -nologo -out:plain/Hello.exe plain/Hello.cs
rc=0; out=$(spm --debug plain/Hello.exe x y) || rc=$?
[ "$rc" -eq 3 ] || fail "exit status not passed through: $rc"
[ "$out" = "hello 2 /usr/lib/mono/4.5/mscorlib.dll" ] || fail "plain program output: $out"
[ ! -e plain/Hello.spstore ] || fail "a program without persistence created a store"

# The null store: snapshots are taken (stop-the-world and incremental) and
# discarded; every start is cold; nothing is created; a path after null: is refused.
mkdir -p nulltest && cd nulltest
spm --sp-store=null: ../err.exe count 3 || fail "persisting to the null store"
spm --sp-store=null: --sp-mode=incremental ../err.exe count 3 || fail "persisting to the null store, incremental"
expect_out "^warm=False" spm --sp-store=null: ../err.exe warm
[ -z "$(ls -A .)" ] || fail "the null store created files: $(ls -A .)"
expect_fail "the null store names nothing" spm --sp-store=null:here ../err.exe count 1
cd ..
