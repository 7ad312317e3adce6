/*
 * spdump: look into a spmono store, for operators.
 *
 *   spdump [--seq N] [--json] [--all] list|show|dump|verify STORE
 *
 *   list    every snapshot, newest first: sequence, time, size, kind (full, full
 *           folded from a chain, or a delta on the snapshot before it, with its
 *           chain's base), valid or
 *           why not
 *   show    a snapshot's header, chain, class cache and roots
 *   dump    its objects as of that snapshot, as text or (--json) as JSON
 *   verify  exit status 0 only when the newest snapshot and every part of its
 *           chain are valid (checksum and every structural invariant of
 *           docs/FORMAT.md, each delta's link to the snapshot before it); says
 *           why not
 *
 * STORE is a location as spmono takes it ("DIR", "file:DIR", "pmem:FILE" or "nats://SERVERS/NAME").  The store is
 * opened read-only and unlocked: a running program may be using it.  show and
 * dump take the newest snapshot whose whole chain is valid (what a restart
 * restores), or --seq N.  A delta (docs/FORMAT.md, "Delta snapshots") is read
 * with its chain: the full snapshot it starts from and every delta up to it,
 * each parsed and each link checked; dump prints the state at N, every object
 * from its latest record.  Text output shows the first 32 elements of a long
 * array or string; --all shows every one (JSON always does).  Exit status: 0
 * fine, 1 the store or snapshot is not valid or cannot be read, 2 wrong usage.
 * --help (the usage, on stdout) and --version exit 0, as GNU tools do; the
 * usage is also the source of spdump(1) (help2man, CMakeLists.txt), so the two
 * cannot drift apart.
 *
 * Everything here reads through the core's validating walk (sp_snapshot_parse):
 * spdump never interprets bytes the walk has not checked.
 */
#define _GNU_SOURCE
#include "sp-chain.h"
#include "sp-format.h"
#include "sp-snapshot.h"
#include "sp-store.h"
#include "sp-version.h"
#include "sp-walk.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Options {
	const char *command;
	const char *store;
	uint64_t seq;          /* 0: the newest valid */
	bool json;
	bool all;
} Options;

#define TEXT_ELEMENTS 32

static void
print_usage (FILE *out)
{
	fprintf (out, "Usage: spdump [--seq N] [--json] [--all] list|show|dump|verify STORE\n"
		 "Look into a spmono store, read-only (a running program may be using it).\n"
		 "\n"
		 "Commands:\n"
		 "  list         the snapshots, newest first: sequence, time, size, kind (full, full\n"
		 "               folded from a chain, or a delta on the snapshot before it, with its\n"
		 "               chain's base), valid or why not (a delta whose chain is broken\n"
		 "               says where)\n"
		 "  show         a snapshot's header, chain, class cache and roots (the newest whose\n"
		 "               whole chain is valid, or --seq N)\n"
		 "  dump         its objects as of that snapshot, as text or JSON (--json); text shows\n"
		 "               32 elements of long arrays and strings unless --all\n"
		 "  verify       exit status 0 only when the newest snapshot and every part of its\n"
		 "               chain are valid (checksums, every structural invariant of the format,\n"
		 "               each delta's link to the snapshot before it); says why not\n"
		 "\n"
		 "A delta snapshot (spmono --sp-delta=on) holds what changed since the snapshot\n"
		 "before it; it is read with its chain, the full snapshot it starts from and\n"
		 "every delta up to it.  show and dump then give the state at that snapshot,\n"
		 "each object from its latest record, as a restart would restore it.\n"
		 "\n"
		 "Options:\n"
		 "  --seq N      show or dump snapshot N instead of the newest valid one\n"
		 "  --json       dump as one JSON document\n"
		 "  --all        dump every element of long arrays and strings\n"
		 "  --help       print this and exit\n"
		 "  --version    print the version and exit\n"
		 "\n"
		 "STORE is a location as spmono's --sp-store takes it: a directory (DIR or\n"
		 "file:DIR), a persistent-memory file (pmem:FILE) or a replicated NATS store\n"
		 "(nats://HOST:PORT[,HOST:PORT...]/NAME).\n"
		 "\n"
		 "Exit status:\n"
		 "  0            fine\n"
		 "  1            the store or the snapshot is not valid or cannot be read\n"
		 "  2            wrong usage\n");
}

static int
usage (void)
{
	print_usage (stderr);
	return 2;
}

static int
parse_options (int argc, char **argv, Options *o)
{
	int positional = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv [i];
		if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0) {
			print_usage (stdout);
			exit (0);
		} else if (strcmp (a, "--version") == 0) {
			printf ("spdump (spmono) %s\n", SPMONO_VERSION);
			exit (0);
		} else if (strcmp (a, "--json") == 0) {
			o->json = true;
		} else if (strcmp (a, "--all") == 0) {
			o->all = true;
		} else if (strcmp (a, "--seq") == 0 && i + 1 < argc) {
			char *end;
			o->seq = strtoull (argv [++i], &end, 10);
			if (*end || o->seq == 0) {
				fprintf (stderr, "spdump: --seq wants a snapshot sequence number (1, 2, ...), not '%s'\n", argv [i]);
				return -1;
			}
		} else if (a [0] == '-' && a [1]) {
			fprintf (stderr, "spdump: unknown option '%s'\n", a);
			return -1;
		} else if (positional == 0) {
			o->command = a;
			positional++;
		} else if (positional == 1) {
			o->store = a;
			positional++;
		} else {
			fprintf (stderr, "spdump: unexpected argument '%s'\n", a);
			return -1;
		}
	}
	if (positional != 2) {
		fprintf (stderr, "spdump: a command and a store are needed\n");
		return -1;
	}
	return 0;
}

/* "2026-11-23 00:30:12.123456789 UTC" */
static void
format_time (uint64_t ns, char *buf, size_t cap)
{
	time_t secs = (time_t)(ns / 1000000000u);
	struct tm tm;
	if (ns == 0 || !gmtime_r (&secs, &tm)) {
		snprintf (buf, cap, "unknown");
		return;
	}
	size_t n = strftime (buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
	snprintf (buf + n, cap - n, ".%09" PRIu64 " UTC", ns % 1000000000u);
}

/* A JSON string (also used for text output): escapes quotes, backslashes, controls and non-ASCII. */
static void
put_quoted_units (const uint16_t *units, uint64_t n)
{
	putchar ('"');
	for (uint64_t i = 0; i < n; i++) {
		uint16_t u = units [i];
		if (u == '"' || u == '\\')
			printf ("\\%c", (char)u);
		else if (u >= 0x20 && u < 0x7f)
			putchar ((char)u);
		else
			printf ("\\u%04x", u);
	}
	putchar ('"');
}

static void
put_quoted (const char *s)
{
	uint64_t n = strlen (s);
	uint16_t *units = malloc ((n + 1) * sizeof *units);
	if (!units)
		return;
	for (uint64_t i = 0; i < n; i++)
		units [i] = (uint8_t)s [i];
	put_quoted_units (units, n);
	free (units);
}

/* A primitive value of `kind` from its wire bytes. */
static void
put_primitive (const uint8_t *p, unsigned kind, bool json)
{
	switch (kind) {
	case SP_KIND_BOOL: printf ("%s", *p ? "true" : "false"); return;
	case SP_KIND_CHAR: printf ("%u", (unsigned)sp_get_le (p, 2)); return;
	case SP_KIND_I1: printf ("%d", (int8_t)*p); return;
	case SP_KIND_U1: printf ("%u", *p); return;
	case SP_KIND_I2: printf ("%d", (int16_t)sp_get_le (p, 2)); return;
	case SP_KIND_U2: printf ("%u", (unsigned)sp_get_le (p, 2)); return;
	case SP_KIND_I4: printf ("%" PRId32, (int32_t)sp_get_le (p, 4)); return;
	case SP_KIND_U4: printf ("%" PRIu32, (uint32_t)sp_get_le (p, 4)); return;
	case SP_KIND_I8: printf ("%" PRId64, (int64_t)sp_get_le (p, 8)); return;
	case SP_KIND_U8: printf ("%" PRIu64, sp_get_le (p, 8)); return;
	case SP_KIND_R4:
	case SP_KIND_R8: {
		double d;
		if (kind == SP_KIND_R4) {
			uint32_t bits = (uint32_t)sp_get_le (p, 4);
			float f;
			memcpy (&f, &bits, sizeof f);
			d = f;
		} else {
			uint64_t bits = sp_get_le (p, 8);
			memcpy (&d, &bits, sizeof d);
		}
		if (isfinite (d))
			printf ("%.17g", d);
		else
			printf (json ? "\"%s\"" : "%s", isnan (d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
		return;
	}
	default: printf ("?"); return;
	}
}

static void
put_reference (uint32_t lid, bool json)
{
	if (!lid)
		printf ("null");
	else if (json)
		printf ("{\"ref\": %" PRIu32 "}", lid);
	else
		printf ("#%" PRIu32, lid);
}

/* Where the references of an instance or element at p start: after its primitives (sp-format.h). */
static const uint8_t *
references_of (const SpSnapClass *c, const uint8_t *p)
{
	for (uint32_t i = 0; i < c->nfields; i++)
		if (c->fields [i].kind != SP_KIND_REF)
			p += sp_kind_size (c->fields [i].kind);
	return p;
}

/*
 * The values of one instance or element at p (primitives in field order, then
 * references, as sp-format.h says), as "name: value" pairs; returns the
 * position after them.  A primitive array's element is its bare value.
 */
static const uint8_t *
put_values (const SpSnapClass *c, const uint8_t *p, bool json)
{
	if (c->kind == SP_CLASS_ARRAY && c->nfields == 1 && !c->fields [0].name [0]) {
		const SpField *f = &c->fields [0];
		if (f->kind == SP_KIND_REF)
			put_reference ((uint32_t)sp_trusted_varint (&p), json);
		else
			put_primitive (p, f->kind, json), p += sp_kind_size (f->kind);
		return p;
	}
	const uint8_t *prim = p, *ref = references_of (c, p);
	printf ("{");
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		printf (i ? ", " : "");
		if (json)
			put_quoted (f->name), printf (": ");
		else
			printf ("%s: ", f->name);
		if (f->kind == SP_KIND_REF) {
			put_reference ((uint32_t)sp_trusted_varint (&ref), json);
		} else {
			put_primitive (prim, f->kind, json);
			prim += sp_kind_size (f->kind);
		}
	}
	printf ("}");
	return ref;
}

/* ---- chains -------------------------------------------------------------- */

/*
 * The store's snapshots, and those found not valid: looking for the newest
 * valid chain, a damaged part is read and parsed once, however many newer
 * deltas need it (a large full snapshot under a long chain).
 */
typedef struct Snaps {
	SpStore *store;
	uint64_t *seqs;          /* newest first */
	size_t n;
	SpError *bad;            /* [i]: why seqs [i] does not read or parse, once known (msg set) */
} Snaps;

static int
snaps_open (SpStore *store, Snaps *sn)
{
	SpError err = { 0 };
	*sn = (Snaps){ .store = store };
	if (store->ops->sequences (store, &sn->seqs, &sn->n, &err) < 0) {
		fprintf (stderr, "spdump: %s\n", err.msg);
		return -1;
	}
	sn->bad = calloc (sn->n ? sn->n : 1, sizeof *sn->bad);
	if (!sn->bad) {
		free (sn->seqs);
		fprintf (stderr, "spdump: out of memory\n");
		return -1;
	}
	return 0;
}

static void
snaps_free (Snaps *sn)
{
	free (sn->seqs);
	free (sn->bad);
}

/* Where seq is in sn->seqs, or sn->n. */
static size_t
snaps_find (const Snaps *sn, uint64_t seq)
{
	size_t i = 0;
	while (i < sn->n && sn->seqs [i] != seq)
		i++;
	return i;
}

/* SpChainFile p, snapshot sn->seqs [i], read and parsed; or -1 with sn->bad [i] saying why (remembered). */
static int
part_load (Snaps *sn, size_t i, SpChainFile *p)
{
	SpError *why = &sn->bad [i];
	if (why->msg [0])
		return -1;
	int rc = sn->store->ops->read (sn->store, p->seq, &p->data, &p->size, why);
	if (rc < 0)
		p->data = NULL;          /* nothing to release */
	else
		rc = sp_snapshot_parse (p->data, p->size, &p->snap, why);
	if (rc < 0 && !why->msg [0])
		sp_error_set (why, "it cannot be read");
	return rc;
}

/*
 * Snapshot seq's parts, from it back along prev_sequence to its full
 * snapshot, each read and parsed, newest first.  The walk ends: a delta's
 * prev_sequence is below its own sequence (sp_snapshot_check), so each part
 * is a different snapshot of the store.
 */
static int
chain_read (Snaps *sn, uint64_t seq, SpChain *c, SpError *err)
{
	for (uint64_t s = seq;;) {
		size_t i = snaps_find (sn, s);
		if (i == sn->n || c->n == sn->n)
			return sp_error_set (err, "its chain needs snapshot %" PRIu64 ", which the store lacks", s);
		SpChainFile *p = &c->parts [c->n++];
		p->seq = s;
		if (part_load (sn, i, p) < 0) {
			*err = sn->bad [i];
			if (s != seq)
				sp_error_prefix (err, "its chain needs snapshot %" PRIu64 ", which is not valid", s);
			return -1;
		}
		c->bytes += p->size;
		if (!sp_header_is_delta (&p->snap.header))
			return 0;
		s = p->snap.header.prev_sequence;
	}
}

/*
 * Snapshot seq with its chain, every part parsed and every link checked; or
 * -1 with err naming the part at fault (and nothing held).
 */
static int
chain_open (Snaps *sn, uint64_t seq, SpChain *c, SpError *err)
{
	*c = (SpChain){ .parts = calloc (sn->n ? sn->n : 1, sizeof *c->parts) };
	int rc = c->parts ? chain_read (sn, seq, c, err) : sp_error_set (err, "out of memory");
	if (rc == 0)
		rc = sp_chain_complete (c, err);
	if (rc < 0)
		sp_chain_free (sn->store, c);
	return rc;
}

/* ---- objects ------------------------------------------------------------- */

typedef struct Elements {
	const SpSnapshot *snap;
	const SpSnapClass *c;   /* NULL: a string */
	uint16_t *units;        /* a string's units, gathered */
	uint64_t shown;         /* elements printed so far */
	uint64_t limit;
	bool json;
} Elements;

static void
put_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	Elements *e = ctx;
	if (!e->c) {
		uint8_t enc = sp_reader_u8 (r);
		const uint8_t *src = sp_reader_take (r, (size_t)count * (enc == SP_STR_LATIN1 ? 1 : 2));
		if (src)
			sp_trusted_units (e->units + start, enc, src, count);
		return;
	}
	const uint8_t *p = r->pos;
	for (uint64_t i = 0; i < count; i++) {
		bool show = e->shown < e->limit;
		if (show)
			printf (e->shown++ ? ", " : "");
		if (show) {
			p = put_values (e->c, p, e->json);
			continue;
		}
		p = sp_snap_class_skip (e->c, p);       /* not shown (text, not --all) */
	}
	r->pos = p;
}

/* An element's latest encoding, and the class (of its file) that reads it. */
typedef struct Slot {
	const uint8_t *p;
	const SpSnapClass *c;
} Slot;

typedef struct Slots {
	Slot *slot;
	uint64_t n;              /* the elements wanted: the first n */
	const SpSnapClass *c;    /* the defining file's class */
} Slots;

/* The elements a piece (or patch) gives that no later record gave: the first found is the latest. */
static void
fill_slots (Slots *s, const SpSnapClass *c, const uint8_t *p, uint64_t start, uint64_t count)
{
	for (uint64_t i = 0; i < count && start + i < s->n; i++) {
		if (!s->slot [start + i].p)
			s->slot [start + i] = (Slot){ p, c };
		p = sp_snap_class_skip (c, p);
	}
}

static void
fill_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	Slots *s = ctx;
	fill_slots (s, s->c, r->pos, start, count);
}

/*
 * An array deltas patched: its updates newest first, then its defining
 * pieces, each filling the elements still empty (later patches win, in chain
 * order and in file order); then the elements, as an unpatched array's.
 */
static int
put_patched (const SpChain *c, const SpSnapshot *def, uint32_t lid, Elements *e)
{
	const SpSnapObject *obj = sp_snapshot_object_const (def, lid);
	Slots s = { .n = obj->length < e->limit ? obj->length : e->limit, .c = &def->classes [obj->class_id] };
	s.slot = calloc (s.n ? s.n : 1, sizeof *s.slot);
	if (!s.slot)
		return -1;
	for (size_t u = c->latest [lid]; u; u = c->updates [u - 1].prev) {
		const SpSnapshot *ps = &c->parts [c->updates [u - 1].part].snap;
		const SpSnapChange *ch = &ps->changes [c->updates [u - 1].change];
		const uint8_t *p = ps->data + ch->body;
		(void)sp_trusted_varint (&p);         /* the piece's count: ch->count */
		fill_slots (&s, &ps->classes [ch->class_id], p, ch->start, ch->count);
	}
	sp_snapshot_pieces (def, lid, fill_piece, &s);
	for (e->shown = 0; e->shown < s.n; e->shown++) {
		printf (e->shown ? ", " : "");
		put_values (s.slot [e->shown].c, s.slot [e->shown].p, e->json);
	}
	free (s.slot);
	return 0;
}

/* An object's latest OBJECT record: the one that defined it, or a later part's (change_fits: of its class). */
static void
put_instance (const SpChain *c, const SpSnapshot *def, uint32_t lid, const Options *o)
{
	const SpSnapshot *s = def;
	const SpSnapObject *obj = sp_snapshot_object_const (def, lid);
	uint32_t class_id = obj->class_id;
	size_t body = obj->body;
	if (c->latest [lid]) {
		const SpChainUpdate *u = &c->updates [c->latest [lid] - 1];
		s = &c->parts [u->part].snap;
		class_id = s->changes [u->change].class_id;
		body = s->changes [u->change].body;
	}
	const SpSnapClass *cls = &s->classes [class_id];
	if (o->json)
		printf ("\"kind\": \"object\", \"class\": "), put_quoted (cls->name), printf (", \"fields\": ");
	else
		printf ("%s ", cls->name);
	put_values (cls, s->data + body, o->json);
}

/* A string: strings never change, so its defining file has it whole. */
static int
put_string (const SpSnapshot *def, uint32_t lid, uint64_t limit, const Options *o)
{
	const SpSnapObject *obj = sp_snapshot_object_const (def, lid);
	Elements e = { .snap = def, .units = malloc ((size_t)(obj->length ? obj->length : 1) * 2) };
	if (!e.units)
		return -1;
	sp_snapshot_pieces (def, lid, put_piece, &e);
	uint64_t n = obj->length < limit ? obj->length : limit;
	if (o->json)
		printf ("\"kind\": \"string\", \"length\": %" PRIu64 ", \"value\": ", obj->length);
	else
		printf ("string[%" PRIu64 "] ", obj->length);
	put_quoted_units (e.units, n);
	if (n < obj->length)
		printf (" ... (%" PRIu64 " more units; --all shows them)", obj->length - n);
	free (e.units);
	return 0;
}

static int
put_array (const SpChain *c, const SpSnapshot *def, uint32_t lid, uint64_t limit, const Options *o)
{
	const SpSnapObject *obj = sp_snapshot_object_const (def, lid);
	const SpSnapClass *cls = &def->classes [obj->class_id];
	Elements e = { .snap = def, .c = cls, .limit = limit, .json = o->json };
	if (o->json)
		printf ("\"kind\": \"array\", \"class\": "), put_quoted (cls->name), printf (", \"length\": %" PRIu64 ", \"elements\": [", obj->length);
	else
		printf ("%s[%" PRIu64 "] [", cls->name, obj->length);
	if (c->latest [lid] && put_patched (c, def, lid, &e) < 0)
		return -1;
	if (!c->latest [lid])
		sp_snapshot_pieces (def, lid, put_piece, &e);
	printf ("]");
	if (e.shown < obj->length)
		printf (" ... (%" PRIu64 " more; --all shows them)", obj->length - e.shown);
	return 0;
}

/* Object lid as of the chain's last part. */
static int
put_object (const SpChain *c, uint32_t lid, const Options *o)
{
	const SpSnapshot *def = &c->parts [sp_chain_definer (c, lid)].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (def, lid);
	uint64_t limit = o->json || o->all ? UINT64_MAX : TEXT_ELEMENTS;
	if (o->json)
		printf ("    {\"lid\": %" PRIu32 ", ", lid);
	else
		printf ("#%" PRIu32 " ", lid);
	int rc = 0;
	if (obj->kind == SP_CLASS_OBJECT)
		put_instance (c, def, lid, o);
	else if (obj->kind == SP_CLASS_STRING)
		rc = put_string (def, lid, limit, o);
	else
		rc = put_array (c, def, lid, limit, o);
	if (rc < 0) {
		fflush (stdout);
		fprintf (stderr, "spdump: out of memory printing #%" PRIu32 "\n", lid);
		return -1;
	}
	printf (o->json ? "}" : "\n");
	return 0;
}

/* ---- commands ------------------------------------------------------------- */

/* What list adds to a store's SpSnapInfo: the header (full or delta, on what), and whether its chain holds. */
typedef struct Row {
	SpSnapHeader h;
	SpSnapTrailer t;
	size_t base;             /* the row of its chain's full snapshot, when chained */
	bool chained;            /* its chain's files all verify (as list checks them) and each link holds */
	bool own_link;           /* not chained because it does not apply to the snapshot before it */
	char why [SP_ERROR_MAX]; /* when the file verifies but its chain does not */
} Row;

static size_t
find_row (const SpSnapInfo *infos, size_t n, uint64_t seq)
{
	size_t i = 0;
	while (i < n && infos [i].sequence != seq)
		i++;
	return i;
}

/* Delta i's chain, from the snapshot it applies to (row j, older, so known already). */
static void
list_link (const SpSnapInfo *infos, size_t n, Row *rows, size_t i)
{
	Row *r = &rows [i];
	uint64_t prev = r->h.prev_sequence;
	size_t j = find_row (infos, n, prev);
	SpError link = { 0 };
	if (j == n)
		snprintf (r->why, sizeof r->why, "its chain needs snapshot %" PRIu64 ", which the store lacks", prev);
	else if (!infos [j].valid)
		snprintf (r->why, sizeof r->why, "its chain needs snapshot %" PRIu64 ", which is not valid", prev);
	else if (!rows [j].chained && rows [j].own_link)
		snprintf (r->why, sizeof r->why, "its chain breaks at snapshot %" PRIu64, prev);
	else if (!rows [j].chained)
		memcpy (r->why, rows [j].why, sizeof r->why);
	else if (sp_chain_link_check (&rows [rows [j].base].h, &rows [j].h, &rows [j].t, &r->h, &link) < 0)
		snprintf (r->why, sizeof r->why, "%s", link.msg), r->own_link = true;
	else
		r->chained = true, r->base = rows [j].base;
}

/*
 * The store's list checks each file alone; read each valid one's header
 * again (SpSnapInfo has none) and follow the chains, oldest first.  A file
 * that cannot be read again (retired meanwhile) counts as not valid.
 */
static void
list_chains (SpStore *store, SpSnapInfo *infos, size_t n, Row *rows)
{
	for (size_t i = n; i-- > 0;) {
		uint8_t *data = NULL;
		size_t size = 0;
		SpError err = { 0 };
		if (!infos [i].valid)
			continue;
		if (store->ops->read (store, infos [i].sequence, &data, &size, &err) < 0 ||
		    sp_snapshot_check (data, size, &rows [i].h, &rows [i].t, &err) < 0) {
			infos [i].valid = false;
			snprintf (infos [i].why, sizeof infos [i].why, "%s", err.msg);
		} else if (!sp_header_is_delta (&rows [i].h)) {
			rows [i].chained = true;
			rows [i].base = i;
		} else {
			list_link (infos, n, rows, i);
		}
		if (data)
			sp_store_release (store, data, size);
	}
}

static void
list_row_json (const SpSnapInfo *info, const Row *r, bool first)
{
	char when [64];
	bool delta = info->valid && sp_header_is_delta (&r->h);
	format_time (info->time_ns, when, sizeof when);
	printf ("%s\n  {\"sequence\": %" PRIu64 ", \"time\": ", first ? "" : ",", info->sequence);
	put_quoted (when);
	printf (", \"time_ns\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"valid\": %s, \"why\": ",
		info->time_ns, info->size, info->valid ? "true" : "false");
	if (info->valid)
		printf ("null");
	else
		put_quoted (info->why);
	if (!info->valid)
		printf (", \"kind\": null, \"base\": null, \"prev\": null");
	else if (delta)
		printf (", \"kind\": \"delta\", \"base\": %" PRIu64 ", \"prev\": %" PRIu64, r->h.base_sequence, r->h.prev_sequence);
	else if (sp_header_is_folded (&r->h))
		printf (", \"kind\": \"folded\", \"base\": %" PRIu64 ", \"prev\": null, \"fold_base\": %" PRIu64, info->sequence,
			r->h.fold_base);
	else
		printf (", \"kind\": \"full\", \"base\": %" PRIu64 ", \"prev\": null", info->sequence);
	printf (", \"chain_valid\": %s, \"chain_why\": ", r->chained ? "true" : "false");
	if (info->valid && !r->chained)
		put_quoted (r->why);
	else
		printf ("null");
	printf ("}");
}

static void
list_row_text (const SpSnapInfo *info, const Row *r)
{
	char when [64], kind [64] = "?";
	format_time (info->time_ns, when, sizeof when);
	if (info->valid && sp_header_is_delta (&r->h))
		snprintf (kind, sizeof kind, "delta on %" PRIu64 ", base %" PRIu64, r->h.prev_sequence, r->h.base_sequence);
	else if (info->valid && sp_header_is_folded (&r->h))
		snprintf (kind, sizeof kind, "full (folded chain)");
	else if (info->valid)
		snprintf (kind, sizeof kind, "full");
	printf ("%10" PRIu64 "  %-33s %12" PRIu64 "  %-24s %s%s\n", info->sequence, when, info->size, kind,
		!info->valid ? "no: " : r->chained ? "yes" : "yes, but ", !info->valid ? info->why : r->chained ? "" : r->why);
}

static int
command_list (SpStore *store, const Options *o)
{
	SpSnapInfo *infos;
	size_t n;
	SpError err = { 0 };
	if (sp_store_list (store, &infos, &n, &err) < 0) {
		fprintf (stderr, "spdump: %s\n", err.msg);
		return 1;
	}
	Row *rows = calloc (n ? n : 1, sizeof *rows);
	if (!rows) {
		free (infos);
		fprintf (stderr, "spdump: out of memory\n");
		return 1;
	}
	list_chains (store, infos, n, rows);
	if (o->json)
		printf ("[");
	else
		printf ("%10s  %-33s %12s  %-24s %s\n", "sequence", "time", "bytes", "kind", "valid");
	for (size_t i = 0; i < n; i++) {
		if (o->json)
			list_row_json (&infos [i], &rows [i], i == 0);
		else
			list_row_text (&infos [i], &rows [i]);
	}
	if (o->json)
		printf ("%s]\n", n ? "\n" : "");
	free (rows);
	free (infos);
	return 0;
}

/* The chain to show: of --seq N, or of the newest snapshot whose whole chain is valid (what a restart restores). */
static int
open_chain (SpStore *store, const Options *o, SpChain *c)
{
	Snaps sn;
	if (snaps_open (store, &sn) < 0)
		return -1;
	int rc = -1;
	if (o->seq && snaps_find (&sn, o->seq) == sn.n)
		fprintf (stderr, "spdump: the store has no snapshot %" PRIu64 "\n", o->seq);
	for (size_t i = 0; i < sn.n && rc < 0; i++) {
		if (o->seq && sn.seqs [i] != o->seq)
			continue;
		SpError why = { 0 };
		rc = chain_open (&sn, sn.seqs [i], c, &why);
		if (rc < 0)
			fprintf (stderr, "spdump: snapshot %" PRIu64 " is not valid: %s\n", sn.seqs [i], why.msg);
	}
	if (rc < 0 && !o->seq)
		fprintf (stderr, "spdump: the store holds no valid snapshot\n");
	snaps_free (&sn);
	return rc;
}

/* A delta's chain (a full snapshot shows as it always did: a chain of one says nothing). */
static void
show_chain (const SpChain *c, const Options *o)
{
	bool folded = sp_header_is_folded (&c->parts [0].snap.header);
	if (c->n == 1 && !folded)
		return;
	if (o->json) {
		printf (",\n \"chain\": {\"base\": %" PRIu64 ", \"folded\": %s, \"bytes\": %" PRIu64 ", \"parts\": [", c->parts [0].seq,
			folded ? "true" : "false", c->bytes);
		for (size_t k = 0; k < c->n; k++)
			printf ("%s%" PRIu64, k ? ", " : "", c->parts [k].seq);
		printf ("]}");
		return;
	}
	printf ("chain: full snapshot %" PRIu64 "%s", c->parts [0].seq,
		folded ? " (folded: the state of the chain up to it, in one file)" : "");
	if (c->n > 1)
		printf (", then delta%s", c->n > 2 ? "s" : "");
	for (size_t k = 1; k < c->n; k++)
		printf ("%s %" PRIu64, k > 1 ? "," : "", c->parts [k].seq);
	printf (" (%zu part%s, %" PRIu64 " bytes)\n", c->n, c->n > 1 ? "s" : "", c->bytes);
}

static void
show_classes_and_roots (const SpChain *chain, const Options *o)
{
	const SpSnapshot *snap = &sp_chain_last (chain)->snap;
	uint64_t seq = sp_chain_last (chain)->seq;
	char when [64];
	format_time (snap->header.time_ns, when, sizeof when);
	const SpSnapTrailer *t = &snap->trailer;
	if (o->json) {
		printf ("{\"sequence\": %" PRIu64 ", \"time\": ", seq);
		put_quoted (when);
		printf (", \"bytes\": %zu, \"nobjects\": %" PRIu32, snap->size, t->nobjects);
		show_chain (chain, o);
		printf (",\n \"classes\": [");
		for (uint32_t i = 1; i <= t->nclasses; i++) {
			const SpSnapClass *c = &snap->classes [i];
			printf ("%s\n  {\"id\": %" PRIu32 ", \"kind\": \"%s\", \"name\": ", i > 1 ? "," : "", i, c->kind == SP_CLASS_ARRAY ? "array" : "object");
			put_quoted (c->name);
			printf (", \"assembly\": ");
			put_quoted (c->assembly);
			printf (", \"fields\": [");
			for (uint32_t k = 0; k < c->nfields; k++) {
				printf ("%s{\"name\": ", k ? ", " : "");
				put_quoted (c->fields [k].name);
				printf (", \"kind\": \"%s\"", sp_kind_name (c->fields [k].kind));
				if (c->fields [k].kind == SP_KIND_REF)
					printf (", \"type\": "), put_quoted (c->fields [k].type_name ? c->fields [k].type_name : "");
				printf ("}");
			}
			printf ("]}");
		}
		printf ("],\n \"roots\": [");
		for (uint32_t i = 0; i < t->nroots; i++) {
			printf ("%s{\"id\": %" PRIu32 ", \"lid\": ", i ? ", " : "", snap->roots [i].id);
			if (snap->roots [i].lid)
				printf ("%" PRIu32 "}", snap->roots [i].lid);
			else
				printf ("null}");
		}
		printf ("]");
		return;
	}
	printf ("snapshot %" PRIu64 ": %zu bytes, taken %s; %" PRIu32 " objects, %" PRIu32 " classes, %" PRIu32 " roots\n",
		seq, snap->size, when, t->nobjects, t->nclasses, t->nroots);
	show_chain (chain, o);
	printf ("classes:\n");
	for (uint32_t i = 1; i <= t->nclasses; i++) {
		const SpSnapClass *c = &snap->classes [i];
		printf ("  %" PRIu32 " %s %s (%s)\n", i, c->kind == SP_CLASS_ARRAY ? "array" : "object", c->name, c->assembly);
		for (uint32_t k = 0; k < c->nfields; k++) {
			const SpField *f = &c->fields [k];
			printf ("      %s %s%s%s\n", f->name [0] ? f->name : "(element)", sp_kind_name (f->kind),
				f->kind == SP_KIND_REF ? " " : "", f->kind == SP_KIND_REF && f->type_name ? f->type_name : "");
		}
	}
	printf ("roots:\n");
	for (uint32_t i = 0; i < t->nroots; i++) {
		printf ("  %" PRIu32 " -> ", snap->roots [i].id);
		put_reference (snap->roots [i].lid, false);
		printf ("\n");
	}
}

static int
command_show_or_dump (SpStore *store, const Options *o, bool dump)
{
	SpChain chain;
	if (open_chain (store, o, &chain) < 0)
		return 1;
	show_classes_and_roots (&chain, o);
	int rc = 0;
	if (dump) {
		printf (o->json ? ",\n \"objects\": [\n" : "objects:\n");
		for (uint32_t lid = 1; lid <= sp_chain_last (&chain)->snap.trailer.nobjects && rc == 0; lid++) {
			if (o->json && lid > 1)
				printf (",\n");
			rc = put_object (&chain, lid, o);
		}
		printf (o->json ? "\n ]" : "");
	}
	printf (o->json ? "}\n" : "");
	sp_chain_free (store, &chain);
	return rc == 0 ? 0 : 1;
}

static int
command_verify (SpStore *store)
{
	Snaps sn;
	SpError err = { 0 };
	if (snaps_open (store, &sn) < 0)
		return 1;
	if (sn.n == 0) {
		snaps_free (&sn);
		printf ("no snapshot in the store\n");
		return 1;
	}
	uint64_t newest = sn.seqs [0];
	SpChain c;
	int rc = chain_open (&sn, newest, &c, &err);
	snaps_free (&sn);
	if (rc < 0) {
		printf ("snapshot %" PRIu64 " is not valid: %s\n", newest, err.msg);
		return 1;
	}
	const SpChainFile *last = sp_chain_last (&c);
	printf ("snapshot %" PRIu64 " is valid: ", newest);
	if (c.n > 1)
		printf ("a delta, part %zu of a chain from %" PRIu64 " (%" PRIu64 " bytes in all); ", c.n, c.parts [0].seq, c.bytes);
	printf ("%zu bytes, %" PRIu32 " objects, %" PRIu32 " roots\n", last->size, last->snap.trailer.nobjects, last->snap.trailer.nroots);
	sp_chain_free (store, &c);
	return 0;
}

int
main (int argc, char **argv)
{
	Options o = { 0 };
	if (parse_options (argc, argv, &o) < 0)
		return usage ();
	bool list = strcmp (o.command, "list") == 0, show = strcmp (o.command, "show") == 0;
	bool dump = strcmp (o.command, "dump") == 0, verify = strcmp (o.command, "verify") == 0;
	if (!list && !show && !dump && !verify) {
		fprintf (stderr, "spdump: unknown command '%s'\n", o.command);
		return usage ();
	}
	SpStore *store;
	SpError err = { 0 };
	if (sp_store_open_readonly (o.store, &store, &err) < 0) {
		fprintf (stderr, "spdump: %s\n", err.msg);
		return 1;
	}
	int rc = list ? command_list (store, &o) : verify ? command_verify (store) : command_show_or_dump (store, &o, dump);
	sp_store_close (store);
	return rc;
}
