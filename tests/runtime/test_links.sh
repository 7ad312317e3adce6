# A restore links references as it meets them (sp-decode.c, "links"): the graph
# restored is the one written whether a reference was linked, made early and found
# to be of another class, or left to the fix-up; --sp-verbose says which did what.
source "$SRCDIR/lib.sh"
"$MCS" -nologo -warnaserror -target:library -r:"$SPLIB/SPersistence.dll" -out:linksbase.dll "$SRCDIR/LinksBase.cs" \
	|| fail "compiling linksbase.dll"
compile links.exe -r:linksbase.dll "$SRCDIR/Links.cs"
restore_case () {   # restore_case CASE: write, restore with --sp-verbose into verbose-CASE.txt, compare the dumps
	local which=$1
	rm -rf "store-$which"
	spm --sp-store="store-$which" links.exe write "$which" > "written-$which.txt" || fail "write $which"
	check_case "$which" "$which"
}
check_case () {     # check_case CASE TAG: restore store-CASE, compare with what was written, say what linked
	local which=$1 tag=$2
	spm --sp-store="store-$which" --sp-verbose links.exe check "$which" > "restored-$tag.txt" 2> "verbose-$tag.txt" \
		|| fail "check $tag: $(cat "verbose-$tag.txt")"
	diff -u "written-$which.txt" "restored-$tag.txt" > /dev/null || fail "$tag: the restored graph differs"
	grep -o "references: [0-9]* linked, [0-9]* by the fix-up" "verbose-$tag.txt" | head -1
}
# The snapshot of CASE as an spmono before the class index wrote it (docs/FORMAT.md), restored:
# every early class is then guessed from the declared class, as before the index.
restore_old () {
	local which=$1 f
	for f in "store-$which"/snap-*.spm; do "$SPDOWNGRADE" "$f" || fail "downgrading $f"; done
	check_case "$which" "old-$which"
}
counts () {         # counts "references: L linked, F by the fix-up": "L F"
	echo "$1" | sed -n 's/references: \([0-9]*\) linked, \([0-9]*\) by the fix-up/\1 \2/p'
}
# A tree of one class: 999 children made early, 999 parents made before; no fix-up.
out=$(restore_case tree); echo "tree: $out"
[ "$out" = "references: 1998 linked, 0 by the fix-up" ] || fail "tree: $out"
# Each node's name met before its string: its record is listed, and the fix-up stores the
# names alone (records of about 12 bytes: the list is not bounded by the input's size).
out=$(restore_case named); echo "named: $out"
[ "$out" = "references: 998 linked, 500 by the fix-up" ] || fail "named: $out"
# Circles in Shape fields, Dogs in Animal (abstract), Tags in ITagged, objects, strings, arrays:
# the snapshot's class index says Circle, Dog and Tag are the only classes those fields can
# hold here, so they are made early and linked; the rest (object, string, arrays) go to the
# fix-up, which stores no more than those.  As an old snapshot (no index: Shape has a subclass
# in its assembly, Animal is abstract, ITagged an interface: none made early) fewer are linked.
out=$(restore_case mixed); echo "mixed: $out"
read -r linked fixed <<< "$(counts "$out")"
[ -n "$linked" ] && [ "$linked" -gt "$fixed" ] || fail "mixed: more left to the fix-up than linked: $out"
old=$(restore_old mixed); echo "mixed, old snapshot: $old"
read -r old_linked old_fixed <<< "$(counts "$old")"
[ "$old_linked" -lt "$linked" ] && [ $((old_linked + old_fixed)) -eq $((linked + fixed)) ] \
	|| fail "mixed: the class index linked no more than the old snapshot's guesses: $out; old: $old"
# Circles restored before the Shape fields that refer to them: linked, their class
# checked against the declared one as the fix-up checks it; the Holder chain too.
out=$(restore_case backward); echo "backward: $out"
[ "$out" = "references: 99 linked, 0 by the fix-up" ] || fail "backward: $out"
# The same snapshot restored by a program whose Circle is no longer a Shape (the same
# leaves): the link leaves the reference to the fix-up, which refuses it, naming it.
mkdir -p v2   # the same assembly name: a snapshot's classes are looked up in the program's assembly
cp linksbase.dll v2/
compile v2/links.exe -define:CIRCLE_NOT_A_SHAPE -r:linksbase.dll "$SRCDIR/Links.cs"
expect_fail "object [0-9]+ has type Circle, which cannot be stored in 'Shape' of type Shape" \
	spm --sp-store=store-backward v2/links.exe check backward
# Gears in Part fields, Part's subclass in another assembly (the program's): the class index
# says Gear is the one class a Part field holds here, so each is made early as a Gear, and
# all 199 references are linked.  An old snapshot (no index) has them made early as Parts,
# Part's assembly having no subclass of it: each Gear's record replaces its early Part, and
# the fix-up goes over every record, storing all 199 references again.
out=$(restore_case foreign); echo "foreign: $out"
[ "$out" = "references: 199 linked, 0 by the fix-up" ] || fail "foreign: $out"
out=$(restore_old foreign); echo "foreign, old snapshot: $out"
echo "$out" | grep -Eq "references: [0-9]+ linked, 199 by the fix-up" || fail "foreign, old snapshot: $out"
# A class with a finalizer has no object made early: each restored one is finalized once.
out=$(restore_case closing); echo "closing: $out"
echo "$out" | grep -Eq "references: 0 linked, 100 by the fix-up" || fail "closing: $out"
