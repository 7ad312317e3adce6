# spdump, the operators' look into a store: list, show, dump (text and JSON),
# verify; a damaged newest snapshot (verify fails, show falls back); --seq;
# wrong usage; a store another process holds.
source "$SRCDIR/lib.sh"
compile rt.exe "$SRCDIR/RoundTrip.cs"
compile err.exe "$SRCDIR/Errors.cs"
spm --sp-store=rich rt.exe write > /dev/null || fail "write"
expect_out "snapshot 1 is valid" "$SPDUMP" verify rich
"$SPDUMP" show rich > show.txt || fail "show: $(cat show.txt)"
grep -q "^classes:" show.txt && grep -q "^roots:" show.txt && grep -q " object Node " show.txt && grep -q "BaseValue int" show.txt \
	|| fail "show lacks the class cache or roots: $(cat show.txt)"
"$SPDUMP" dump rich > dump.txt || fail "dump"
grep -q '^#1 ' dump.txt && grep -q 'NaN' dump.txt && grep -q '^#[0-9]* string\[' dump.txt || fail "dump: $(head -20 dump.txt)"
# JSON: well-formed, every object once, every reference and root to an object of the snapshot.
"$SPDUMP" --json dump rich > dump.json || fail "dump --json"
python3 - dump.json <<'PY' || fail "dump --json is not a consistent document"
import json, sys
d = json.load(open(sys.argv[1]))
objs = d["objects"]
assert len(objs) == d["nobjects"] and [o["lid"] for o in objs] == list(range(1, d["nobjects"] + 1))
def refs(v):
    if isinstance(v, dict):
        if set(v) == {"ref"}:
            yield v["ref"]
        else:
            for x in v.values():
                yield from refs(x)
    elif isinstance(v, list):
        for x in v:
            yield from refs(x)
for o in objs:
    for r in refs(o.get("fields", o.get("elements", []))):
        assert 1 <= r <= d["nobjects"], r
assert all(r["lid"] is None or 1 <= r["lid"] <= d["nobjects"] for r in d["roots"])
PY
"$SPDUMP" --json list rich | python3 -c 'import json,sys; l=json.load(sys.stdin); assert l[0]["valid"] and l[0]["sequence"] == 1' \
	|| fail "list --json"
# Long arrays: text shows their first 32 elements and says how many more; --all shows every one.
compile coll.exe "$SRCDIR/Collections.cs"
spm --sp-store=long coll.exe write 2000 1 > /dev/null || fail "write lists"
"$SPDUMP" dump long > long.txt && "$SPDUMP" --all dump long > all.txt || fail "dump long"
grep -q '(2016 more; --all shows them)' long.txt || fail "long array not shortened"
grep -q 'more; --all' all.txt && fail "--all still shortens"
grep -q ' 1999, ' all.txt || fail "--all lacks elements"
# Several snapshots, the newest damaged: list says why, verify fails, show takes the newest valid one.
spm --sp-store=many --sp-keep=3 err.exe count 3 || fail "count"
newest=$(ls many/snap-*.spm | sort | tail -1)
printf '\xff' | dd of="$newest" bs=1 seek=60 conv=notrunc status=none
"$SPDUMP" list many > list.txt
grep -Eq '^ +3 .* no: ' list.txt && grep -Eq '^ +2 .* yes' list.txt || fail "list: $(cat list.txt)"
expect_fail "snapshot 3 is not valid" "$SPDUMP" verify many
expect_out "snapshot 2:" "$SPDUMP" show many
expect_out "snapshot 1:" "$SPDUMP" --seq 1 show many
expect_fail "no snapshot 9" "$SPDUMP" --seq 9 show many
: > "$newest"        # an empty file
expect_fail "snapshot 3 is not valid" "$SPDUMP" verify many
# A store a running program holds (its LOCK flock'ed): spdump reads it all the same.
flock many/LOCK "$SPDUMP" --seq 2 verify many > /dev/null 2>&1 && fail "verify should judge the newest (3), not --seq"
expect_out "snapshot 2:" flock many/LOCK "$SPDUMP" show many
# Wrong usage: exit 2 with the usage; a missing store: exit 1 naming it.
rc=0; "$SPDUMP" > /dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "no arguments: exit $rc"
rc=0; "$SPDUMP" frob rich > /dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "unknown command: exit $rc"
rc=0; "$SPDUMP" --seq x show rich > /dev/null 2>&1 || rc=$?; [ "$rc" = 2 ] || fail "--seq x: exit $rc"
rc=0; "$SPDUMP" --frob list rich > out.txt 2> err.txt || rc=$?
[ "$rc" = 2 ] && [ ! -s out.txt ] && grep -q "unknown option '--frob'" err.txt || fail "unknown option: exit $rc, $(cat out.txt err.txt)"
# --help: the usage on stdout, exit 0 (GNU); it names every command and option and the pmem store.
"$SPDUMP" --help > help.txt 2> err.txt || fail "--help exits $?"
[ ! -s err.txt ] || fail "--help wrote to stderr: $(cat err.txt)"
for word in list show dump verify --seq --json --all --version "pmem:FILE" "file:DIR"; do
	grep -q -- "$word" help.txt || fail "--help does not mention $word: $(cat help.txt)"
done
# --version: the one version of sp-version.h.
version=$(sed -n 's/^#define SPMONO_VERSION "\(.*\)"/\1/p' "$SRCDIR/../../mono/spersist/sp-version.h")
[ "$("$SPDUMP" --version)" = "spdump (spmono) $version" ] || fail "--version: $("$SPDUMP" --version), not $version"
expect_fail "store 'nowhere'" "$SPDUMP" list nowhere
[ ! -e nowhere ] || fail "spdump created the store it was asked about"
echo "spdump reads stores"
