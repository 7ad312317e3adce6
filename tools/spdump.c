/*
 * spdump: look into a spmono store, for operators.
 *
 *   spdump [--seq N] [--json] [--all] list|show|dump|verify STORE
 *
 *   list    every snapshot, newest first: sequence, time, size, valid or why not
 *   show    a snapshot's header, class cache and roots
 *   dump    its objects, as text or (--json) as JSON
 *   verify  exit status 0 only when the newest snapshot is valid (checksum and
 *           every structural invariant of docs/FORMAT.md); says why not
 *
 * STORE is a location as spmono takes it ("DIR", "file:DIR" or "pmem:FILE").  The store is
 * opened read-only and unlocked: a running program may be using it.  show and
 * dump take the newest valid snapshot, or --seq N.  Text output shows the
 * first 32 elements of a long array or string; --all shows every one (JSON
 * always does).  Exit status: 0 fine, 1 the store or snapshot is not valid or
 * cannot be read, 2 wrong usage.  --help (the usage, on stdout) and --version
 * exit 0, as GNU tools do; the usage is also the source of spdump(1)
 * (help2man, CMakeLists.txt), so the two cannot drift apart.
 *
 * Everything here reads through the core's validating walk (sp_snapshot_parse):
 * spdump never interprets bytes the walk has not checked.
 */
#define _GNU_SOURCE
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
		 "  list         the snapshots, newest first: sequence, time, size, valid or why not\n"
		 "  show         a snapshot's header, class cache and roots (the newest valid, or --seq N)\n"
		 "  dump         its objects, as text or JSON (--json); text shows 32 elements of long\n"
		 "               arrays and strings unless --all\n"
		 "  verify       exit status 0 only when the newest snapshot is valid (its checksum and\n"
		 "               every structural invariant of the format); says why not\n"
		 "\n"
		 "Options:\n"
		 "  --seq N      show or dump snapshot N instead of the newest valid one\n"
		 "  --json       dump as one JSON document\n"
		 "  --all        dump every element of long arrays and strings\n"
		 "  --help       print this and exit\n"
		 "  --version    print the version and exit\n"
		 "\n"
		 "STORE is a location as spmono's --sp-store takes it: a directory (DIR or\n"
		 "file:DIR) or a persistent-memory file (pmem:FILE).\n"
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

/* The position after the values of an instance or element at p. */
static const uint8_t *
skip_values (const SpSnapClass *c, const uint8_t *p)
{
	p = references_of (c, p);
	for (uint32_t i = 0; i < c->nfields; i++)
		if (c->fields [i].kind == SP_KIND_REF)
			(void)sp_trusted_varint (&p);
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
		p = skip_values (e->c, p);       /* not shown (text, not --all) */
	}
	r->pos = p;
}

static int
put_object (const SpSnapshot *snap, uint32_t lid, const Options *o)
{
	const SpSnapObject *obj = &snap->objects [lid];
	uint64_t limit = o->json || o->all ? UINT64_MAX : TEXT_ELEMENTS;
	if (o->json)
		printf ("    {\"lid\": %" PRIu32 ", ", lid);
	else
		printf ("#%" PRIu32 " ", lid);
	if (obj->kind == SP_CLASS_OBJECT) {
		const SpSnapClass *c = &snap->classes [obj->class_id];
		if (o->json)
			printf ("\"kind\": \"object\", \"class\": "), put_quoted (c->name), printf (", \"fields\": ");
		else
			printf ("%s ", c->name);
		put_values (c, snap->data + obj->body, o->json);
	} else if (obj->kind == SP_CLASS_STRING) {
		Elements e = { .snap = snap, .units = malloc ((size_t)(obj->length ? obj->length : 1) * 2) };
		if (!e.units)
			return -1;
		sp_snapshot_pieces (snap, lid, put_piece, &e);
		uint64_t n = obj->length < limit ? obj->length : limit;
		if (o->json)
			printf ("\"kind\": \"string\", \"length\": %" PRIu64 ", \"value\": ", obj->length);
		else
			printf ("string[%" PRIu64 "] ", obj->length);
		put_quoted_units (e.units, n);
		if (n < obj->length)
			printf (" ... (%" PRIu64 " more units; --all shows them)", obj->length - n);
		free (e.units);
	} else {
		const SpSnapClass *c = &snap->classes [obj->class_id];
		Elements e = { .snap = snap, .c = c, .limit = limit, .json = o->json };
		if (o->json)
			printf ("\"kind\": \"array\", \"class\": "), put_quoted (c->name), printf (", \"length\": %" PRIu64 ", \"elements\": [", obj->length);
		else
			printf ("%s[%" PRIu64 "] [", c->name, obj->length);
		sp_snapshot_pieces (snap, lid, put_piece, &e);
		printf ("]");
		if (e.shown < obj->length)
			printf (" ... (%" PRIu64 " more; --all shows them)", obj->length - e.shown);
	}
	printf (o->json ? "}" : "\n");
	return 0;
}

/* ---- commands ------------------------------------------------------------- */

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
	if (o->json)
		printf ("[");
	else
		printf ("%10s  %-33s %12s  %s\n", "sequence", "time", "bytes", "valid");
	for (size_t i = 0; i < n; i++) {
		char when [64];
		format_time (infos [i].time_ns, when, sizeof when);
		if (o->json) {
			printf ("%s\n  {\"sequence\": %" PRIu64 ", \"time\": ", i ? "," : "", infos [i].sequence);
			put_quoted (when);
			printf (", \"time_ns\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"valid\": %s, \"why\": ",
				infos [i].time_ns, infos [i].size, infos [i].valid ? "true" : "false");
			if (infos [i].valid)
				printf ("null");
			else
				put_quoted (infos [i].why);
			printf ("}");
		} else {
			printf ("%10" PRIu64 "  %-33s %12" PRIu64 "  %s%s\n", infos [i].sequence, when, infos [i].size,
				infos [i].valid ? "yes" : "no: ", infos [i].valid ? "" : infos [i].why);
		}
	}
	if (o->json)
		printf ("%s]\n", n ? "\n" : "");
	free (infos);
	return 0;
}

/* The snapshot to show: --seq N, or the newest that parses; its bytes stay mapped in *data. */
static int
open_snapshot (SpStore *store, const Options *o, uint8_t **data, size_t *size, uint64_t *seq, SpSnapshot *snap)
{
	uint64_t *seqs;
	size_t n;
	SpError err = { 0 };
	if (store->ops->sequences (store, &seqs, &n, &err) < 0) {
		fprintf (stderr, "spdump: %s\n", err.msg);
		return -1;
	}
	bool found = false;
	for (size_t i = 0; i < n && !found; i++) {
		if (o->seq && seqs [i] != o->seq)
			continue;
		*data = NULL;
		if (store->ops->read (store, seqs [i], data, size, &err) < 0 || sp_snapshot_parse (*data, *size, snap, &err) < 0) {
			fprintf (stderr, "spdump: snapshot %" PRIu64 " is not valid: %s\n", seqs [i], err.msg);
			if (*data)
				sp_store_release (store, *data, *size);
			if (o->seq)
				break;
			continue;
		}
		*seq = seqs [i];
		found = true;
	}
	bool asked_missing = o->seq && !found && (n == 0 || err.msg [0] == '\0');
	if (asked_missing)
		fprintf (stderr, "spdump: the store has no snapshot %" PRIu64 "\n", o->seq);
	else if (!found && !o->seq)
		fprintf (stderr, "spdump: the store holds no valid snapshot\n");
	free (seqs);
	return found ? 0 : -1;
}

static void
show_classes_and_roots (const SpSnapshot *snap, uint64_t seq, const Options *o)
{
	char when [64];
	format_time (snap->header.time_ns, when, sizeof when);
	const SpSnapTrailer *t = &snap->trailer;
	if (o->json) {
		printf ("{\"sequence\": %" PRIu64 ", \"time\": ", seq);
		put_quoted (when);
		printf (", \"bytes\": %zu, \"nobjects\": %" PRIu32 ",\n \"classes\": [", snap->size, t->nobjects);
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
	uint8_t *data = NULL;
	size_t size = 0;
	uint64_t seq = 0;
	SpSnapshot snap;
	if (open_snapshot (store, o, &data, &size, &seq, &snap) < 0)
		return 1;
	show_classes_and_roots (&snap, seq, o);
	int rc = 0;
	if (dump) {
		printf (o->json ? ",\n \"objects\": [\n" : "objects:\n");
		for (uint32_t lid = 1; lid <= snap.trailer.nobjects && rc == 0; lid++) {
			if (o->json && lid > 1)
				printf (",\n");
			rc = put_object (&snap, lid, o);
		}
		printf (o->json ? "\n ]" : "");
	}
	printf (o->json ? "}\n" : "");
	sp_snapshot_free (&snap);
	sp_store_release (store, data, size);
	return rc == 0 ? 0 : 1;
}

static int
command_verify (SpStore *store)
{
	uint64_t *seqs;
	size_t n;
	SpError err = { 0 };
	if (store->ops->sequences (store, &seqs, &n, &err) < 0) {
		fprintf (stderr, "spdump: %s\n", err.msg);
		return 1;
	}
	if (n == 0) {
		free (seqs);
		printf ("no snapshot in the store\n");
		return 1;
	}
	uint64_t newest = seqs [0];
	free (seqs);
	uint8_t *data = NULL;
	size_t size = 0;
	SpSnapshot snap;
	int rc = store->ops->read (store, newest, &data, &size, &err);
	if (rc == 0)
		rc = sp_snapshot_parse (data, size, &snap, &err);
	if (rc == 0) {
		printf ("snapshot %" PRIu64 " is valid: %zu bytes, %" PRIu32 " objects, %" PRIu32 " roots\n",
			newest, size, snap.trailer.nobjects, snap.trailer.nroots);
		sp_snapshot_free (&snap);
	} else {
		printf ("snapshot %" PRIu64 " is not valid: %s\n", newest, err.msg);
	}
	sp_store_release (store, data, size);
	return rc == 0 ? 0 : 1;
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
