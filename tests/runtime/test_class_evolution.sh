# Class evolution (docs/FORMAT.md "Class evolution"): a new version of the
# program restores the old version's state, and back where the rules allow;
# what cannot restore is refused by name before anything is used, the store
# untouched.  Both modes, deltas, and after kill -9.
source "$SRCDIR/lib.sh"
version () {   # version NAME [DEFINE]: Evolve.cs built as NAME/evolve.exe, the same assembly name each time
	mkdir -p "$1"
	"$MCS" -nologo -warnaserror ${2:+-define:$2} -r:"$SPLIB/SPersistence.dll" -out:"$1/evolve.exe" \
		"$SRCDIR/TestUtil.cs" "$SRCDIR/Evolve.cs" || fail "compiling version $1"
}
version v1; version add ADD; version widen WIDEN; version reftype REFTYPE; version toref TOREF; version drop DROP

# killed_in_loop MODE PROGRAM: PROGRAM persists period after period in MODE
# (to store, from what it holds) until kill -9 at a random instant.
killed_in_loop () {
	"$SPMONO" --sp-mode=$1 --sp-store=store "$2" loop > loop.out 2>&1 &
	local pid=$!
	for _ in $(seq 600); do grep -q persisting loop.out 2>/dev/null && break; sleep 0.05; done
	grep -q persisting loop.out || { kill -9 $pid; fail "$2 ($1) persisted nothing in 30 s: $(cat loop.out)"; }
	sleep "0.$((RANDOM % 5))"
	kill -9 $pid; wait $pid 2>/dev/null || true
}

# killed_then_restored MODE OLD NEW [ARG]: OLD, from an empty store, killed in
# its loop; NEW restores one whole period of it.
killed_then_restored () {
	rm -rf store
	killed_in_loop $1 "$2"
	expect_out "period [0-9]+" spm --sp-store=store "$3" check-any ${4:-}
}

for mode in stw incremental; do
	opts=(); [ $mode = incremental ] && opts=(--sp-mode=incremental)
	s=store-$mode
	# Added, removed and reordered fields, both ways: v1 writes, add reads
	# and writes, v1 reads again and writes, add reads again.  Each version
	# carries the fields it does not know (unknown data): what v1 wrote in
	# period 5 comes back to it through add, and add's period 6 through v1.
	rm -rf "$s"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe write 5 || fail "$mode: v1 write"
	expect_out "class Plant changed since the snapshot: .*'Removed' \(int\) is not in the loaded class: kept as unknown data.*'Added' \(int\) is new: -1 \(its Default\)" \
		spm "${opts[@]}" --sp-store="$s" add/evolve.exe check 5 fresh
	spm "${opts[@]}" --sp-store="$s" add/evolve.exe rewrite 6 fresh || fail "$mode: add rewrites v1's state"
	spm "${opts[@]}" --sp-store="$s" add/evolve.exe check 6 || fail "$mode: add reads its own"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe check 6 carried 5 || fail "$mode: v1 reads add's state again"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe rewrite 7 carried 5 || fail "$mode: v1 rewrites add's state"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe check 7 || fail "$mode: v1 reads its own again"
	spm "${opts[@]}" --sp-store="$s" add/evolve.exe check 7 carried 6 || fail "$mode: add reads v1's state again"
	spm "${opts[@]}" --sp-store="$s" add/evolve.exe rewrite 8 carried 6 || fail "$mode: add rewrites v1's state again"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe check 8 carried 7 || fail "$mode: v1 reads add's state a second time"
	# A class that says DropUnknown does not carry them.
	spm "${opts[@]}" --sp-store="$s" drop/evolve.exe rewrite 9 carried 7 || fail "$mode: drop rewrites add's state"
	spm "${opts[@]}" --sp-store="$s" add/evolve.exe check 9 fresh || fail "$mode: add's fields went through DropUnknown"

	# Widened fields: forward only.  Back, the narrowing is refused by name and the store is left as it was.
	rm -rf "$s"
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe write 3 || fail "$mode: v1 write"
	expect_out "'Level' int -> long" spm "${opts[@]}" --sp-store="$s" widen/evolve.exe check 3
	spm "${opts[@]}" --sp-store="$s" widen/evolve.exe rewrite 4 || fail "$mode: widen rewrites v1's state"
	before=$(cd "$s" && ls snap-* && cat snap-* | md5sum)
	spm "${opts[@]}" --sp-store="$s" v1/evolve.exe refused "'Level' is long in the snapshot but int in the loaded class: int cannot hold every long value" \
		|| fail "$mode: narrowing not refused by name"
	[ "$before" = "$(cd "$s" && ls snap-* && cat snap-* | md5sum)" ] || fail "$mode: a refused restore changed the store"
	spm "${opts[@]}" --sp-store="$s" widen/evolve.exe check 4 || fail "$mode: widen reads its state after the refusal"
done

# What cannot restore, refused with the rule and what to do.
rm -rf store; spm --sp-store=store v1/evolve.exe write 2 || fail "v1 write"
spm --sp-store=store reftype/evolve.exe refused "'Main' refers to Valve in the snapshot but to Pump in the loaded class: a reference field keeps its declared type" \
	|| fail "a reference's new declared type was not refused by name"
spm --sp-store=store toref/evolve.exe refused "'Count' is short in the snapshot but System.String in the loaded class: a field cannot change between a value and a reference" \
	|| fail "a value that became a reference was not refused by name"

# Deltas: v1's chain (a full snapshot and deltas) restores into the new
# version, whose next snapshot is full (a chain holds one layout of a class).
rm -rf store
spm --sp-delta=on --sp-delta-ratio=10000 --sp-store=store v1/evolve.exe write 1 || fail "v1 write, deltas"
spm --sp-delta=on --sp-delta-ratio=10000 --sp-store=store v1/evolve.exe rewrite 2 || fail "v1 delta"
expect_out "delta" "$SPDUMP" list store
spm --sp-delta=on --sp-delta-ratio=10000 --sp-store=store add/evolve.exe rewrite 3 fresh || fail "add rewrites v1's chain"
newest=$("$SPDUMP" list store | sed -n 2p)
echo "$newest" | grep -q "full" || fail "the first snapshot after a class change is not full: $newest"
spm --sp-delta=on --sp-delta-ratio=10000 --sp-store=store add/evolve.exe check 3 || fail "add reads its own after the chain"

# kill -9 of the old version at any instant, in either mode: each new version
# (fields added and removed; fields widened) restores one whole period.
# And the unknown data survives it: add goes on from v1's period 5, carrying
# v1's Removed, and is killed; v1 gets its period 5's value back.
for mode in stw incremental; do
	rm -rf store
	spm --sp-mode=$mode --sp-store=store v1/evolve.exe write 5 || fail "$mode: v1 write before add's loop"
	killed_in_loop $mode add/evolve.exe
	expect_out "period [0-9]+" spm --sp-mode=$mode --sp-store=store v1/evolve.exe check-any carried 5
done
for mode in stw incremental; do
	for version in add widen; do
		other=; [ $version = add ] && other=fresh
		for trial in 1 2; do
			killed_then_restored $mode v1/evolve.exe $version/evolve.exe $other
		done
	done
done

# Renames declared with FormerNames: a class moved to a namespace, fields and
# a struct's member renamed, and what names the renamed classes (a reference
# field's declared type, a generic argument, an array's element) follows.
mkdir -p rename renamed
"$MCS" -nologo -warnaserror -r:"$SPLIB/SPersistence.dll" -out:rename/rename.exe "$SRCDIR/TestUtil.cs" "$SRCDIR/Rename.cs" \
	|| fail "compiling Rename.cs"
"$MCS" -nologo -warnaserror -define:RENAME -r:"$SPLIB/SPersistence.dll" -out:renamed/rename.exe "$SRCDIR/TestUtil.cs" "$SRCDIR/Rename.cs" \
	|| fail "compiling Rename.cs, renamed"
rm -rf store
spm --sp-store=store rename/rename.exe write 4 || fail "write before the renames"
expect_out "class Plant is now Site.Unit" spm --sp-store=store renamed/rename.exe check 4
expect_out "'Level' is now 'Height'" spm --sp-store=store renamed/rename.exe check 4

# The dry run: --sp-check says whether the newest snapshot restores into a
# version, with every change and the rule applied, without running it (no
# snapshot is written) and without touching the store.
rm -rf store
spm --sp-store=store v1/evolve.exe write 8 || fail "v1 write for the dry run"
before=$(cd store && ls snap-* && cat snap-* | md5sum)
out=$(spm --sp-check --sp-store=store add/evolve.exe write 9) || fail "--sp-check refused a version that restores: $out"
echo "$out" | grep -q "'Removed' (int) is not in the loaded class: kept as unknown data" || fail "--sp-check does not list the changes: $out"
echo "$out" | grep -q "snapshot 1 of store restores into add/evolve.exe" || fail "--sp-check gives no verdict: $out"
out=$(spm --sp-check --sp-store=store widen/evolve.exe write 9) || fail "--sp-check refused a widening: $out"
echo "$out" | grep -q "'Level' int -> long" || fail "--sp-check does not list the widening: $out"
spm --sp-store=store widen/evolve.exe rewrite 9 || fail "widen rewrites for the dry run"
before=$(cd store && ls snap-* && cat snap-* | md5sum)
rc=0; out=$(spm --sp-check --sp-store=store v1/evolve.exe write 10) || rc=$?
[ $rc = 1 ] || fail "--sp-check of a narrowing exits $rc: $out"
echo "$out" | grep -q "v1/evolve.exe does not restore: .*'Level' is long in the snapshot but int" || fail "--sp-check's refusal: $out"
[ "$before" = "$(cd store && ls snap-* && cat snap-* | md5sum)" ] || fail "--sp-check changed the store or ran the program"
mkdir -p empty-store
expect_out "holds no snapshot: the program would start cold" spm --sp-check --sp-store=empty-store v1/evolve.exe write 1
expect_fail "does not restore: store 'no-store': cannot open directory" spm --sp-check --sp-store=no-store v1/evolve.exe write 1

# The upgrade hook: ISPersistentUpgrade.OnRestored on each restored object of
# a changed class, with the old values of its removed, renamed and widened
# fields, before the first SPC call returns; a hook that throws makes that call
# throw, after the others ran.  Unchanged classes are not called.
for v in "" UPGRADE THROW; do
	mkdir -p "upgrade$v"
	"$MCS" -nologo -warnaserror ${v:+-define:$v} -r:"$SPLIB/SPersistence.dll" -out:"upgrade$v/upgrade.exe" \
		"$SRCDIR/TestUtil.cs" "$SRCDIR/Upgrade.cs" || fail "compiling Upgrade.cs $v"
done
for mode in stw incremental; do
	rm -rf store
	spm --sp-mode=$mode --sp-store=store upgrade/upgrade.exe write || fail "$mode: write before the upgrade"
	spm --sp-mode=$mode --sp-store=store upgradeUPGRADE/upgrade.exe check || fail "$mode: the upgrade hooks"
	spm --sp-mode=$mode --sp-store=store upgradeTHROW/upgrade.exe check || fail "$mode: a hook that throws"
	# After kill -9 of the old version at any instant: the hooks see one whole period's old values.
	rm -rf store
	killed_in_loop $mode upgrade/upgrade.exe
	expect_out "period [0-9]+" spm --sp-mode=$mode --sp-store=store upgradeUPGRADE/upgrade.exe check any
done

# A class moved to another assembly (the program's reference), declaring its former name.
mkdir -p moved
"$MCS" -nologo -warnaserror -target:library -define:PARTS -r:"$SPLIB/SPersistence.dll" -out:moved/parts.dll "$SRCDIR/Rename.cs" \
	|| fail "compiling parts.dll"
"$MCS" -nologo -warnaserror "-define:RENAME;MOVED" -r:"$SPLIB/SPersistence.dll" -r:moved/parts.dll -out:moved/rename.exe \
	"$SRCDIR/TestUtil.cs" "$SRCDIR/Rename.cs" || fail "compiling Rename.cs with the class moved"
rm -rf store
spm --sp-store=store rename/rename.exe write 6 || fail "write before the move"
expect_out "class Valve is now Site.Actuator" spm --sp-store=store moved/rename.exe check 6

# kill -9 of the first version at any instant: the renamed one restores one whole period.
for mode in stw incremental; do
	for trial in 1 2; do
		killed_then_restored $mode rename/rename.exe renamed/rename.exe
	done
done
