/*
 * sp-unknown.c: unknown data (part of the client, see sp-mono-state.h;
 * docs/FORMAT.md "Class evolution").
 *
 * A snapshot restored into a class that lacks some of its fields (a field
 * removed by an upgrade, or added by the newer version a downgrade left) keeps
 * their values, unless the class says [SPersistent (DropUnknown = true)]: the
 * class gets the snapshot's leaves it does not know (SpClass.unknown, which
 * the serializer writes after its own), and each restored object its values
 * for them, here.  So the version that knows those fields gets them back from
 * any later snapshot, as .NET's IExtensibleDataObject keeps unknown members.
 *
 * While the restore decodes, each such record's dropped values are copied
 * into one arena (by LID: a delta's later record of an object replaces its
 * earlier one), in the layout of its snapshot class.  When the restore
 * succeeds they become the table the serializer reads:
 *
 *   entries  one per object: its identity hash (kept in the object's header,
 *            so it survives the GC moving the object; sp-identity.c), a weak
 *            handle to it (the table keeps nothing alive, and an object of the
 *            same hash is told apart), where its primitives' bytes start in
 *            `prims` (wire order, its class's unknown layout) and its
 *            references' objects in `refs`;
 *   index    open addressing by identity hash, entry index + 1 (0: empty);
 *   refs     one managed object[] (a strong handle: an unknown reference
 *            keeps its target, as a field would).
 *
 * Built once, when the program's restore succeeds, and only read after that,
 * by the serializer and the barriers on any thread; the next restore
 * replaces it.  Cost: nothing for a class without unknown leaves (one test per
 * object in the serializer); a lookup per object for one with them; and a
 * weak handle per restored object that carries values (bench/run-evolve.sh).
 * Objects the program makes carry zeros and nulls.
 */

typedef struct SpUnknownEntry {
	guint32 hash;                 /* the object's identity hash */
	guint32 weak;                 /* the object */
	guint32 prims_at;             /* its primitives' values, wire order, in sp_unknown.prims */
	guint32 first_ref;            /* its references' objects, from here in the refs array */
} SpUnknownEntry;

static struct {
	SpUnknownEntry *entries;
	guint32 nentries;
	guint32 *index;               /* [mask + 1]: entry index + 1 by identity hash, 0: empty */
	guint32 mask;
	uint8_t *prims;
	guint32 refs;                 /* object[] (strong handle), 0: none */
} sp_unknown;

/* The dropped leaves of one snapshot class (a class of one part of the chain), as its records give them. */
typedef struct SpUnknownLayout {
	SpClass *live;
	guint32 nleaves;
	char **names;
	uint8_t *kinds;
	guint32 prim_bytes, nrefs;    /* of one record's dropped values */
	guint32 *dest;                /* publish: each leaf's byte in the class's unknown primitives, or index among its references */
} SpUnknownLayout;

/* One object's dropped values, in the arena: its layout's primitives, then its references' LIDs (4 bytes each). */
typedef struct SpUnknownRecord {
	guint32 lid, layout, at;
} SpUnknownRecord;

/* What a restore keeps, until it succeeds. */
typedef struct SpUnknownPending {
	GHashTable *by_class;         /* live SpClass * -> SpUnknown *: the classes' unknown leaves */
	GPtrArray *layouts;           /* SpUnknownLayout * */
	GHashTable *layout_of;        /* SpSnapClass * -> layout index + 1 (the part being decoded: replaced per class) */
	const SpSnapClass *last;      /* the last class looked up, and its layout index + 1 */
	guint last_layout;
	GArray *records;              /* SpUnknownRecord */
	GByteArray *arena;
	guint32 *record_of;           /* [lid]: record index + 1, 0: none */
	size_t nlids;
	gboolean failed;              /* err said why */
	SpError err;
} SpUnknownPending;

/* ---- the serializer's side --------------------------------------------------- */

/*
 * The entry after the last one this thread found.  Entries are in the
 * restore's record order, which is the order the writer's serializer met the
 * objects in, and a snapshot of the restored graph meets them in much the
 * same order: so the next entry is most often the one wanted, found without
 * the index's cache misses (a million objects: 290 ms a snapshot by the index
 * alone, about 4.5 times one with no unknown data).
 */
static __thread guint32 sp_unknown_cursor;

static const SpUnknownEntry *
sp_unknown_entry_of (MonoObject *obj)
{
	if (!sp_unknown.index)
		return NULL;
	guint32 next = sp_unknown_cursor;
	if (next < sp_unknown.nentries && mono_gchandle_get_target_internal (sp_unknown.entries [next].weak) == obj) {
		sp_unknown_cursor = next + 1;
		return &sp_unknown.entries [next];
	}
	guint32 hash = (guint32)mono_object_hash_internal (obj);
	for (guint32 i = hash & sp_unknown.mask; sp_unknown.index [i]; i = (i + 1) & sp_unknown.mask) {
		const SpUnknownEntry *e = &sp_unknown.entries [sp_unknown.index [i] - 1];
		if (e->hash == hash && mono_gchandle_get_target_internal (e->weak) == obj) {
			sp_unknown_cursor = sp_unknown.index [i];
			return e;
		}
	}
	return NULL;
}

bool
sp_client_unknown_values (void *obj, const SpClass *c, const uint8_t **prims, void *const **refs)
{
	const SpUnknownEntry *e = sp_unknown_entry_of ((MonoObject *)obj);
	if (!e)
		return false;
	MonoArray *all = sp_unknown.refs ? (MonoArray *)mono_gchandle_get_target_internal (sp_unknown.refs) : NULL;
	*prims = sp_unknown.prims + e->prims_at;
	*refs = all && c->unknown->nrefs ? (void *const *)mono_array_addr_with_size_fast (all, sizeof (MonoObject *), e->first_ref) : NULL;
	return c->unknown->nrefs == 0 || *refs != NULL;
}

/* Forget the values of the last restore (before another one publishes its own). */
static void
sp_unknown_forget (void)
{
	for (guint32 i = 0; i < sp_unknown.nentries; i++)
		mono_gchandle_free_internal (sp_unknown.entries [i].weak);
	if (sp_unknown.refs)
		mono_gchandle_free_internal (sp_unknown.refs);
	free (sp_unknown.entries);
	free (sp_unknown.index);
	free (sp_unknown.prims);
	memset (&sp_unknown, 0, sizeof sp_unknown);
}

/* ---- while the restore decodes ------------------------------------------------ */

static void
sp_unknown_fail (SpUnknownPending *p, const char *what)
{
	if (!p->failed)
		sp_error_set (&p->err, "out of memory keeping the unknown data of %s", what);
	p->failed = TRUE;
}

/* A layout of c's dropped leaves (the classes' names copied: c goes with its part). */
static SpUnknownLayout *
sp_unknown_layout_new (const SpSnapClass *c)
{
	SpUnknownLayout *l = g_new0 (SpUnknownLayout, 1);
	l->live = (SpClass *)c->resolved;
	l->names = g_new0 (char *, c->nfields + 1);
	l->kinds = g_new0 (uint8_t, c->nfields + 1);
	for (uint32_t i = 0; i < c->nfields; i++) {
		if (c->leaf_changed [i] != SP_LEAF_DROPPED)
			continue;
		l->names [l->nleaves] = g_strdup (c->fields [i].name);
		l->kinds [l->nleaves++] = c->fields [i].kind;
		if (c->fields [i].kind == SP_KIND_REF)
			l->nrefs++;
		else
			l->prim_bytes += sp_kind_size (c->fields [i].kind);
	}
	return l;
}

static void
sp_unknown_layout_free (gpointer data)
{
	SpUnknownLayout *l = data;
	g_strfreev (l->names);
	g_free (l->kinds);
	g_free (l->dest);
	g_free (l);
}

/* A class of the part being decoded changed: whatever its address meant in an earlier part is forgotten. */
static void
sp_unknown_forget_class (SpUnknownPending *p, const SpSnapClass *c)
{
	p->last = NULL;
	if (p->layout_of)
		g_hash_table_remove (p->layout_of, c);
}

/* Snapshot class c restores into a class that lacks some of its leaves, which it keeps (c->keep_unknown). */
static void
sp_unknown_note_class (SpUnknownPending *p, const SpSnapClass *c)
{
	SpClass *live = (SpClass *)c->resolved;
	if (p->failed)
		return;
	if (!p->by_class) {
		p->by_class = g_hash_table_new (NULL, NULL);
		p->layouts = g_ptr_array_new ();
		p->layout_of = g_hash_table_new (NULL, NULL);
		p->records = g_array_new (FALSE, FALSE, sizeof (SpUnknownRecord));
		p->arena = g_byte_array_new ();
	}
	SpUnknown *u = g_hash_table_lookup (p->by_class, live);
	if (sp_evolve_unknown_merge (&u, c, live, &p->err) < 0)
		p->failed = TRUE;
	if (u)
		g_hash_table_insert (p->by_class, live, u);
	g_ptr_array_add (p->layouts, sp_unknown_layout_new (c));
	g_hash_table_insert (p->layout_of, (gpointer)c, GUINT_TO_POINTER (p->layouts->len));
	p->last = NULL;
}

/* Object lid's record (values) of class c: its dropped values, kept (a later record's replace an earlier one's). */
static void
sp_unknown_note (SpUnknownPending *p, uint32_t lid, const SpSnapClass *c, const uint8_t *values, guint32 nobjects)
{
	if (p->failed || !p->layout_of)
		return;
	if (c != p->last) {
		p->last = c;
		p->last_layout = GPOINTER_TO_UINT (g_hash_table_lookup (p->layout_of, c));
	}
	if (!p->last_layout)
		return;                  /* a class of this part that keeps nothing (DropUnknown, or only hooks) */
	if (!p->record_of) {
		p->nlids = (size_t)nobjects + 1;
		p->record_of = calloc (p->nlids, sizeof (guint32));
		if (!p->record_of) {
			sp_unknown_fail (p, "the restored objects");
			return;
		}
	}
	if (lid >= p->nlids)
		return;                  /* not an object of the chain's (validated: cannot happen) */
	const SpUnknownLayout *l = g_ptr_array_index (p->layouts, p->last_layout - 1);
	SpUnknownRecord rec = { lid, p->last_layout - 1, p->arena->len };
	g_byte_array_set_size (p->arena, p->arena->len + l->prim_bytes + 4 * l->nrefs);
	sp_evolve_dropped_values (c, values, p->arena->data + rec.at, (uint32_t *)(p->arena->data + rec.at + l->prim_bytes));
	if (p->record_of [lid])
		*(&g_array_index (p->records, SpUnknownRecord, p->record_of [lid] - 1)) = rec;
	else {
		g_array_append_val (p->records, rec);
		p->record_of [lid] = p->records->len;
	}
}

static void
sp_unknown_pending_free (SpUnknownPending *p)
{
	if (p->by_class) {
		GHashTableIter it;
		gpointer live, u;
		g_hash_table_iter_init (&it, p->by_class);
		while (g_hash_table_iter_next (&it, &live, &u))
			sp_evolve_unknown_free ((SpUnknown *)u);
		g_hash_table_destroy (p->by_class);
	}
	if (p->layouts) {
		for (guint i = 0; i < p->layouts->len; i++)
			sp_unknown_layout_free (g_ptr_array_index (p->layouts, i));
		g_ptr_array_free (p->layouts, TRUE);
	}
	if (p->layout_of)
		g_hash_table_destroy (p->layout_of);
	if (p->records)
		g_array_free (p->records, TRUE);
	if (p->arena)
		g_byte_array_free (p->arena, TRUE);
	free (p->record_of);
	memset (p, 0, sizeof *p);
}

/* ---- when it succeeds ----------------------------------------------------------- */

/* The restore's classes get their unknown leaves (replacing an earlier restore's); by_class is emptied. */
static void
sp_unknown_install_classes (SpUnknownPending *p)
{
	GHashTableIter it;
	gpointer key, value;
	g_hash_table_iter_init (&it, p->by_class);
	while (g_hash_table_iter_next (&it, &key, &value)) {
		SpClass *live = key;
		SpUnknown *u = value;
		sp_evolve_unknown_free ((SpUnknown *)live->unknown);
		live->unknown = u->nleaves > live->nfields ? u : NULL;
		if (!live->unknown)
			sp_evolve_unknown_free (u);
	}
	g_hash_table_remove_all (p->by_class);
}

/* Where each leaf of layout l goes among its class's unknown values. */
static void
sp_unknown_layout_map (SpUnknownLayout *l)
{
	const SpUnknown *u = l->live->unknown;
	l->dest = g_new0 (guint32, l->nleaves + 1);
	for (guint32 k = 0; u && k < l->nleaves; k++) {
		guint32 prim_at = 0, ref_at = 0, at = 0;
		if (!sp_evolve_unknown_leaf (u, l->live, l->names [k], &at)) {
			l->dest [k] = G_MAXUINT32;      /* cannot be: every dropped leaf was merged */
			continue;
		}
		for (uint32_t i = l->live->nfields; i < at; i++) {
			if (u->leaves [i].kind == SP_KIND_REF)
				ref_at++;
			else
				prim_at += sp_kind_size (u->leaves [i].kind);
		}
		l->dest [k] = l->kinds [k] == SP_KIND_REF ? ref_at : prim_at;
	}
}

/* Object obj's entry, from its record: its values moved into their places in its class's unknown layout. */
static void
sp_unknown_fill (SpUnknownEntry *e, MonoObject *obj, const SpUnknownPending *p, const SpUnknownRecord *rec, MonoArray *refs,
		 const SpObjects *objects)
{
	const SpUnknownLayout *l = g_ptr_array_index (p->layouts, rec->layout);
	const uint8_t *prims = p->arena->data + rec->at;
	const uint8_t *lids = prims + l->prim_bytes;
	e->hash = (guint32)mono_object_hash_internal (obj);
	e->weak = mono_gchandle_new_weakref_internal (obj, FALSE);
	for (guint32 k = 0; k < l->nleaves; k++) {
		if (l->kinds [k] != SP_KIND_REF) {
			if (l->dest [k] != G_MAXUINT32)
				memcpy (sp_unknown.prims + e->prims_at + l->dest [k], prims, sp_kind_size (l->kinds [k]));
			prims += sp_kind_size (l->kinds [k]);
			continue;
		}
		guint32 lid;
		memcpy (&lid, lids, 4);
		lids += 4;
		if (lid && lid < objects->count && l->dest [k] != G_MAXUINT32)
			mono_array_setref_fast (refs, e->first_ref + l->dest [k], sp_objects_get (objects, lid));
	}
}

/* The index over the entries: open addressing, at most half full.  -1: no memory. */
static int
sp_unknown_index (void)
{
	guint32 size = 16;
	while (size < 2 * sp_unknown.nentries)
		size *= 2;
	sp_unknown.mask = size - 1;
	sp_unknown.index = calloc (size, sizeof (guint32));
	if (!sp_unknown.index)
		return -1;
	for (guint32 n = 0; n < sp_unknown.nentries; n++) {
		guint32 i = sp_unknown.entries [n].hash & sp_unknown.mask;
		while (sp_unknown.index [i])
			i = (i + 1) & sp_unknown.mask;
		sp_unknown.index [i] = n + 1;
	}
	return 0;
}

/*
 * The restore succeeded: its classes carry their unknown leaves, and each
 * object its values (objects: LID -> object).  Replaces what an earlier
 * restore left.
 */
static int
sp_unknown_publish (SpUnknownPending *p, const SpObjects *objects, SpError *err)
{
	if (p->failed)
		return sp_error_set (err, "%s", p->err.msg);
	if (!p->by_class)
		return 0;
	sp_unknown_forget ();
	sp_unknown_install_classes (p);
	guint32 nrefs = 0, nprims = 0;
	for (guint i = 0; i < p->layouts->len; i++)
		sp_unknown_layout_map (g_ptr_array_index (p->layouts, i));
	for (guint i = 0; i < p->records->len; i++) {
		const SpUnknownLayout *l = g_ptr_array_index (p->layouts, (&g_array_index (p->records, SpUnknownRecord, i))->layout);
		nrefs += l->live->unknown ? l->live->unknown->nrefs : 0;
		nprims += l->live->unknown ? l->live->unknown->prim_bytes : 0;
	}
	ERROR_DECL (error);
	MonoArray *refs = mono_array_new_checked (mono_domain_get (), mono_defaults.object_class, nrefs, error);
	sp_unknown.entries = calloc (p->records->len + 1, sizeof (SpUnknownEntry));
	sp_unknown.prims = calloc (1, nprims + 1);
	if (!is_ok (error) || !sp_unknown.entries || !sp_unknown.prims) {
		mono_error_cleanup (error);
		sp_unknown_forget ();
		return sp_error_set (err, "out of memory keeping the unknown data of %u restored objects", p->records->len);
	}
	sp_unknown.refs = mono_gchandle_new_internal ((MonoObject *)refs, FALSE);
	for (guint i = 0, prims_at = 0, first_ref = 0; i < p->records->len; i++) {
		const SpUnknownRecord *rec = &g_array_index (p->records, SpUnknownRecord, i);
		const SpUnknownLayout *l = g_ptr_array_index (p->layouts, rec->layout);
		MonoObject *obj = sp_objects_get (objects, rec->lid);
		if (!l->live->unknown || !obj)
			continue;
		SpUnknownEntry *e = &sp_unknown.entries [sp_unknown.nentries++];
		e->prims_at = prims_at;
		e->first_ref = first_ref;
		sp_unknown_fill (e, obj, p, rec, refs, objects);
		prims_at += l->live->unknown->prim_bytes;
		first_ref += l->live->unknown->nrefs;
	}
	if (sp_unknown_index () < 0) {
		sp_unknown_forget ();
		return sp_error_set (err, "out of memory keeping the unknown data of %u restored objects", p->records->len);
	}
	return 0;
}
