# spdump, the operators' look into a store: list, show, dump (text and JSON),
# verify; a damaged newest snapshot (verify fails, show falls back); --seq;
# wrong usage; a store another process holds; delta chains (list marks full
# snapshots and deltas, dump gives the state at a snapshot with its chain
# applied, verify judges the whole chain; a damaged delta, a broken link, a
# missing base).
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

# Delta chains: full snapshot 1, then deltas 2..5 (SpdumpDelta.cs, every value a function of the period).
compile sd.exe "$SRCDIR/SpdumpDelta.cs"
spm --sp-store=chain --sp-delta=on --sp-delta-ratio=10000 sd.exe 5 || fail "write a chain"
"$SPDUMP" list chain > list.txt
grep -Eq '^ +1 .* full +yes$' list.txt || fail "list: 1 is not a valid full snapshot: $(cat list.txt)"
for s in 2 3 4 5; do
	grep -Eq "^ +$s .* delta on $((s - 1)), base 1 +yes\$" list.txt || fail "list: $s is not a valid delta on $((s - 1)): $(cat list.txt)"
done
"$SPDUMP" --json list chain | python3 -c '
import json, sys
l = json.load(sys.stdin)
got = [(x["sequence"], x["kind"], x["base"], x["prev"], x["chain_valid"], x["chain_why"]) for x in l]
assert got == [(s, "delta", 1, s - 1, True, None) for s in (5, 4, 3, 2)] + [(1, "full", 1, None, True, None)], got' \
	|| fail "list --json of a chain"
expect_out "snapshot 5 is valid: a delta, part 5 of a chain from 1 " "$SPDUMP" verify chain
expect_out "^chain: full snapshot 1, then deltas 2, 3, 4, 5 \(5 parts, " "$SPDUMP" show chain
"$SPDUMP" --seq 1 show chain > show.txt || fail "show --seq 1: $(cat show.txt)"
grep -q '^snapshot 1: ' show.txt && ! grep -q '^chain:' show.txt || fail "show of a full snapshot names a chain: $(cat show.txt)"
# Text: the root every delta gives again (Period), an element every delta patches (Values[10]), new strings.
"$SPDUMP" --seq 1 dump chain > base.txt || fail "dump --seq 1: $(cat base.txt)"
"$SPDUMP" dump chain > newest.txt || fail "dump: $(cat newest.txt)"
grep -q '^#1 State {Period: 1, ' base.txt && grep -Eq '^#2 System.Int64\[\]\[16384\] \[(7, ){10}101, 7, ' base.txt \
	&& ! grep -q '"item 2"' base.txt || fail "dump --seq 1 is not the state at 1: $(head -12 base.txt)"
grep -q '^#1 State {Period: 5, ' newest.txt && grep -Eq '^#2 System.Int64\[\]\[16384\] \[(7, ){10}105, 7, ' newest.txt \
	&& grep -q '"item 5"' newest.txt || fail "dump is not the state at 5: $(head -12 newest.txt)"
# JSON: the whole state at every snapshot of the chain, as SpdumpDelta.cs made it.
python3 - "$SPDUMP" <<'PY' || fail "dump --json of a chain is not the program's state"
import json, subprocess, sys
for n in range(1, 6):
    out = subprocess.run([sys.argv[1], "--json", "--seq", str(n), "dump", "chain"], check=True, capture_output=True, text=True).stdout
    d = json.loads(out)
    objs = {o["lid"]: o for o in d["objects"]}
    assert sorted(objs) == list(range(1, d["nobjects"] + 1)), n
    if n == 1:
        assert "chain" not in d, d["chain"]
    else:
        assert d["chain"]["base"] == 1 and d["chain"]["parts"] == list(range(1, n + 1)), d["chain"]
    root = objs[d["roots"][0]["lid"]]
    assert root["class"] == "State" and root["fields"]["Period"] == n, (n, root)
    want = [7] * 16384
    want[10] = 100 + n
    for p in range(1, n + 1):
        want[512 * p + 1] = 900000 + p
    values = objs[root["fields"]["Values"]["ref"]]["elements"]
    assert values == want, (n, [(i, v, want[i]) for i, v in enumerate(values) if v != want[i]][:10])
    def item(ref):
        o = objs[ref["ref"]]
        return o["fields"]["Id"], objs[o["fields"]["Name"]["ref"]]["value"]
    items = objs[root["fields"]["Items"]["ref"]]["elements"]
    assert items[n + 1:] == [None] * (15 - n), (n, items)
    assert [item(r) for r in items[:n + 1]] == [(1000 + n, "first")] + [(p, "item %d" % p) for p in range(1, n + 1)], n
PY
# A damaged middle delta (3): verify names it; list marks the deltas after it; dump falls back to
# the newest snapshot whose whole chain is valid (2, what a restart restores); --seq 5 fails naming 3.
flip () { python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[int(sys.argv[2])] ^= 0xff; open(sys.argv[1], "wb").write(d)' "$@"; }
cp -r chain hurt
flip hurt/snap-00000000000000000003.spm 100
expect_fail "^snapshot 5 is not valid: its chain needs snapshot 3, which is not valid: checksum mismatch" "$SPDUMP" verify hurt
"$SPDUMP" list hurt > list.txt
grep -Eq '^ +3 .* no: checksum mismatch' list.txt && grep -Eq '^ +2 .* delta on 1, base 1 +yes$' list.txt \
	&& grep -Eq '^ +5 .* delta on 4, base 1 +yes, but its chain needs snapshot 3, which is not valid$' list.txt \
	|| fail "list of a chain with a damaged delta: $(cat list.txt)"
"$SPDUMP" dump hurt > dump.txt 2> err.txt || fail "dump does not fall back: $(cat err.txt)"
grep -q '^snapshot 2: ' dump.txt && grep -q '^#1 State {Period: 2, ' dump.txt && grep -Eq '\[(7, ){10}102, ' dump.txt \
	|| fail "dump did not fall back to the state at 2: $(head -12 dump.txt)"
grep -q "snapshot 5 is not valid: its chain needs snapshot 3, which is not valid" err.txt || fail "no word of the skipped chain: $(cat err.txt)"
expect_fail "snapshot 5 is not valid: its chain needs snapshot 3, which is not valid" "$SPDUMP" --seq 5 dump hurt
# A link that does not hold: snapshot 2 of another run of the program, valid alone, but not the 2 that 3 applies to.
spm --sp-store=other --sp-delta=on --sp-delta-ratio=10000 sd.exe 2 || fail "write another chain"
cp -r chain mixed
cp other/snap-00000000000000000002.spm mixed/
expect_fail "^snapshot 5 is not valid: its chain breaks at snapshot 2: delta 2 does not apply to snapshot 1 " "$SPDUMP" verify mixed
"$SPDUMP" list mixed > list.txt
grep -Eq '^ +2 .* yes, but delta 2 does not apply to snapshot 1 ' list.txt && grep -Eq '^ +4 .* yes, but its chain breaks at snapshot 2$' list.txt \
	|| fail "list of a chain with a broken link: $(cat list.txt)"
expect_out "^snapshot 1: " "$SPDUMP" show mixed
# A chain without its base.
cp -r chain headless
rm headless/snap-00000000000000000001.spm
expect_fail "^snapshot 5 is not valid: its chain needs snapshot 1, which the store lacks" "$SPDUMP" verify headless
expect_fail "holds no valid snapshot" "$SPDUMP" dump headless
# A delta that contradicts its chain, its checksum intact: its patch of Items (#3, 16 elements) moved one past the end.
cp -r chain contra
python3 - contra/snap-00000000000000000005.spm <<'PY' || fail "could not craft the contradicting delta"
import re, sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
d = bytearray(open(sys.argv[1], "rb").read())
at = [m.start() for m in re.finditer(rb"\x07\x03[\x01-\x7f]\x00\x10", d)]   # PATCH lid 3, class, start 0, count 16
assert len(at) == 1, at
d[at[0] + 3] = 1
body = bytes(d[:-4])
open(sys.argv[1], "wb").write(body + crc32c(body).to_bytes(4, "little"))
PY
expect_fail "^snapshot 5 is not valid: it patches elements \[1, 17\) of #3, which has 16" "$SPDUMP" verify contra
expect_out "^snapshot 4: " "$SPDUMP" show contra
# A larger chain (Delta.cs: random stores into 20000 cells and a 200000-element array, patched
# card by card) against full snapshots of the same states: the same object graph from the roots.
compile delta.exe "$SRCDIR/Delta.cs"
spm --sp-store=dchain --sp-delta=on delta.exe run 6 > /dev/null || fail "Delta.cs with deltas"
spm --sp-store=dfull --sp-keep=6 delta.exe run 6 > /dev/null || fail "Delta.cs without"
expect_out "snapshot 6 is valid: a delta, part 6 of a chain from 1 " "$SPDUMP" verify dchain
for s in 3 6; do
	"$SPDUMP" --json --seq $s dump dchain > d.json && "$SPDUMP" --json --seq $s dump dfull > f.json || fail "dump --json --seq $s"
	python3 - d.json f.json <<'PY' || fail "the chain's state at $s is not that of the full snapshot $s"
import json, sys
def load(path):
    d = json.load(open(path))
    return {r["id"]: r["lid"] for r in d["roots"]}, {o["lid"]: o for o in d["objects"]}
(ra, oa), (rb, ob) = load(sys.argv[1]), load(sys.argv[2])
assert ra.keys() == rb.keys()
pairs, seen = [(ra[k], rb[k]) for k in ra], {}
def same(x, y):
    if isinstance(x, dict) and set(x) == {"ref"}:
        assert isinstance(y, dict) and set(y) == {"ref"}, (x, y)
        pairs.append((x["ref"], y["ref"]))
    elif isinstance(x, dict):
        assert isinstance(y, dict) and x.keys() == y.keys(), (x, y)
        for k in x:
            same(x[k], y[k])
    elif isinstance(x, list):
        assert isinstance(y, list) and len(x) == len(y)
        for p, q in zip(x, y):
            same(p, q)
    else:
        assert x == y, (x, y)
while pairs:
    a, b = pairs.pop()
    assert (a is None) == (b is None), (a, b)
    if a is None or seen.get(a) == b:
        continue
    assert a not in seen, ("shared differently", a, b)
    seen[a] = b
    same({k: v for k, v in oa[a].items() if k != "lid"}, {k: v for k, v in ob[b].items() if k != "lid"})
assert len(seen) > 40000 and len(set(seen.values())) == len(seen), len(seen)
PY
done
echo "spdump reads stores"
