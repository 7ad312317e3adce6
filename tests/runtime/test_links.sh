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
	spm --sp-store="store-$which" --sp-verbose links.exe check "$which" > "restored-$which.txt" 2> "verbose-$which.txt" \
		|| fail "check $which: $(cat "verbose-$which.txt")"
	diff -u "written-$which.txt" "restored-$which.txt" > /dev/null || fail "$which: the restored graph differs"
	grep -o "references: [0-9]* linked, [0-9]* by the fix-up" "verbose-$which.txt" | head -1
}
# A tree of one class: 999 children made early, 999 parents made before; no fix-up.
out=$(restore_case tree); echo "tree: $out"
[ "$out" = "references: 1998 linked, 0 by the fix-up" ] || fail "tree: $out"
# Each node's name met before its string: its record is listed, and the fix-up stores the
# names alone (records of about 12 bytes: the list is not bounded by the input's size).
out=$(restore_case named); echo "named: $out"
[ "$out" = "references: 998 linked, 500 by the fix-up" ] || fail "named: $out"
# Circles in Shape fields (Shape has a subclass in its assembly: none is made early),
# Animal (abstract), ITagged, object, strings, arrays: each reference is linked where its
# target exists and fits, and the rest go to the fix-up, which stores no more than those.
out=$(restore_case mixed); echo "mixed: $out"
linked=$(echo "$out" | sed -n 's/references: \([0-9]*\) linked, \([0-9]*\) by the fix-up/\1/p')
fixed=$(echo "$out" | sed -n 's/references: \([0-9]*\) linked, \([0-9]*\) by the fix-up/\2/p')
[ -n "$linked" ] && [ "$linked" -gt "$fixed" ] || fail "mixed: more left to the fix-up than linked: $out"
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
# Circles in Shape fields, met before their records, are not made early: Shape has a
# subclass in its assembly. Gears in Part fields are: Part's assembly has none (Gear is in
# the program's); each Gear's record replaces its early Part, and the fix-up goes over
# every record, storing all 199 references again.
out=$(restore_case foreign); echo "foreign: $out"
echo "$out" | grep -Eq "references: [0-9]+ linked, 199 by the fix-up" || fail "foreign: $out"
# A class with a finalizer has no object made early: each restored one is finalized once.
out=$(restore_case closing); echo "closing: $out"
echo "$out" | grep -Eq "references: 0 linked, 100 by the fix-up" || fail "closing: $out"
