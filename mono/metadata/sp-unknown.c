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
 * Where the values live: a table by identity hash (kept in the object's
 * header, so it survives the GC moving the object; sp-identity.c), each
 * entry holding a weak handle to its object (so the table keeps no object
 * alive, and an object of the same hash is told apart), its primitives'
 * bytes in wire order, and where its references' objects start in one
 * managed object[] (a strong handle: an unknown reference keeps its target,
 * as a field would).  The table is built once, when the program's restore
 * succeeds, and only read after that, by the serializer and the barriers on
 * any thread; the next restore replaces it.
 *
 * Cost: nothing for a class without unknown leaves (one test per object in
 * the serializer); a lookup per object for one with them, and a weak handle
 * per restored object that carries values (SGen scans weak handles at each
 * collection).  Objects the program makes carry zeros and nulls.
 */

typedef struct SpUnknownEntry {
	struct SpUnknownEntry *next;  /* same identity hash */
	guint32 weak;                 /* the object */
	guint32 first_ref;            /* its references' objects, from here in the table's array */
	uint8_t prims [];             /* its primitives' values, wire order */
} SpUnknownEntry;

static struct {
	GHashTable *by_hash;          /* identity hash -> SpUnknownEntry * */
	guint32 refs;                 /* object[]: every entry's references (strong handle), 0: none */
} sp_unknown;

/* What a restore found: the classes that carry unknown data after it, until it succeeds. */
typedef struct SpUnknownPending {
	GHashTable *by_class;         /* live SpClass * -> SpUnknown * */
	gboolean failed;              /* out of memory: err said why */
	SpError err;
} SpUnknownPending;

static gboolean
sp_unknown_values_of (MonoObject *obj, const SpClass *c, const uint8_t **prims, void *const **refs)
{
	if (!sp_unknown.by_hash)
		return FALSE;
	guint hash = (guint)mono_object_hash_internal (obj);
	for (SpUnknownEntry *e = g_hash_table_lookup (sp_unknown.by_hash, GUINT_TO_POINTER (hash)); e; e = e->next) {
		if (mono_gchandle_get_target_internal (e->weak) != obj)
			continue;
		MonoArray *all = sp_unknown.refs ? (MonoArray *)mono_gchandle_get_target_internal (sp_unknown.refs) : NULL;
		*prims = e->prims;
		*refs = c->unknown->nrefs && all ? (void *const *)mono_array_addr_with_size_fast (all, sizeof (MonoObject *), e->first_ref) : NULL;
		return c->unknown->nrefs == 0 || all != NULL;
	}
	return FALSE;
}

bool
sp_client_unknown_values (void *obj, const SpClass *c, const uint8_t **prims, void *const **refs)
{
	return sp_unknown_values_of ((MonoObject *)obj, c, prims, refs);
}

static void
sp_unknown_entries_free (gpointer data)
{
	for (SpUnknownEntry *e = data, *next; e; e = next) {
		next = e->next;
		mono_gchandle_free_internal (e->weak);
		g_free (e);
	}
}

/* Forget the values of the last restore (before another one publishes its own). */
static void
sp_unknown_forget (void)
{
	if (sp_unknown.by_hash)
		g_hash_table_destroy (sp_unknown.by_hash);
	if (sp_unknown.refs)
		mono_gchandle_free_internal (sp_unknown.refs);
	sp_unknown.by_hash = NULL;
	sp_unknown.refs = 0;
}

/* Snapshot class c restores into a class that lacks some of its leaves, which it keeps (c->keep_unknown). */
static void
sp_unknown_note_class (SpUnknownPending *p, const SpSnapClass *c)
{
	SpClass *live = (SpClass *)c->resolved;
	if (p->failed)
		return;
	if (!p->by_class)
		p->by_class = g_hash_table_new (NULL, NULL);
	SpUnknown *u = g_hash_table_lookup (p->by_class, live);
	if (sp_evolve_unknown_merge (&u, c, live, &p->err) < 0)
		p->failed = TRUE;
	if (u)
		g_hash_table_insert (p->by_class, live, u);
}

static void
sp_unknown_pending_free (SpUnknownPending *p)
{
	if (!p->by_class)
		return;
	GHashTableIter it;
	gpointer live, u;
	g_hash_table_iter_init (&it, p->by_class);
	while (g_hash_table_iter_next (&it, &live, &u))
		sp_evolve_unknown_free ((SpUnknown *)u);
	g_hash_table_destroy (p->by_class);
	p->by_class = NULL;
}

/* The classes of the restore get their unknown leaves (replacing an earlier restore's). */
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
	g_hash_table_destroy (p->by_class);
	p->by_class = NULL;
}

/* The class map of a restored object whose class now carries unknown data, or NULL. */
static const SpClass *
sp_unknown_class_of (MonoObject *obj)
{
	SpError unused = { 0 };
	SpClass *c = obj ? sp_mono_class_map (mono_object_class (obj), &unused) : NULL;
	return c && c->unknown ? c : NULL;
}

/* One object's entry: its old leaves (u->leaves) by name into the class's unknown leaves. */
static SpUnknownEntry *
sp_unknown_entry (MonoObject *obj, const SpClass *c, const SpUpgrade *up, MonoArray *refs, guint32 first_ref, MonoArray *objects)
{
	const SpUnknown *u = c->unknown;
	SpUnknownEntry *e = g_malloc0 (sizeof *e + u->prim_bytes);
	e->weak = mono_gchandle_new_weakref_internal (obj, FALSE);
	e->first_ref = first_ref;
	for (guint k = 0; k < up->leaves->len; k++) {
		const SpOldLeaf *old = &g_array_index (up->leaves, SpOldLeaf, k);
		uint32_t at;
		const SpField *leaf = sp_evolve_unknown_leaf (u, c, old->name, &at);
		if (!leaf || leaf->kind != old->kind)
			continue;
		/* Its place among the unknown primitives, or references. */
		guint32 prim_at = 0, ref_at = 0;
		for (uint32_t i = c->nfields; i < at; i++) {
			if (u->leaves [i].kind == SP_KIND_REF)
				ref_at++;
			else
				prim_at += sp_kind_size (u->leaves [i].kind);
		}
		if (old->kind == SP_KIND_REF)
			mono_array_setref_fast (refs, first_ref + ref_at, old->lid ? mono_array_get_fast (objects, MonoObject *, old->lid) : NULL);
		else
			sp_kind_copy (e->prims + prim_at, old->bytes, old->kind);      /* host order back to wire order */
	}
	return e;
}

/*
 * The restore succeeded: its classes carry their unknown leaves, and each
 * object its values (ups: every changed object's old leaves, by LID;
 * objects: LID -> object).  Replaces what an earlier restore left.
 */
static int
sp_unknown_publish (SpUnknownPending *p, const SpUpgrades *ups, MonoArray *objects, SpError *err)
{
	if (p->failed) {
		sp_unknown_pending_free (p);
		return sp_error_set (err, "%s", p->err.msg);
	}
	if (!p->by_class)
		return 0;
	sp_unknown_forget ();
	sp_unknown_install_classes (p);
	guint32 nrefs = 0;
	for (guint i = 0; ups->list && i < ups->list->len; i++) {
		const SpUpgrade *up = g_ptr_array_index (ups->list, i);
		const SpClass *c = sp_unknown_class_of (mono_array_get_fast (objects, MonoObject *, up->lid));
		nrefs += c ? c->unknown->nrefs : 0;
	}
	ERROR_DECL (error);
	MonoArray *refs = mono_array_new_checked (mono_domain_get (), mono_defaults.object_class, nrefs, error);
	if (!is_ok (error)) {
		mono_error_cleanup (error);
		return sp_error_set (err, "out of memory keeping the unknown data of %u restored objects", ups->list->len);
	}
	sp_unknown.refs = mono_gchandle_new_internal ((MonoObject *)refs, FALSE);
	sp_unknown.by_hash = g_hash_table_new_full (NULL, NULL, NULL, sp_unknown_entries_free);
	guint32 first_ref = 0;
	for (guint i = 0; ups->list && i < ups->list->len; i++) {
		const SpUpgrade *up = g_ptr_array_index (ups->list, i);
		MonoObject *obj = mono_array_get_fast (objects, MonoObject *, up->lid);
		const SpClass *c = sp_unknown_class_of (obj);
		if (!c)
			continue;
		SpUnknownEntry *e = sp_unknown_entry (obj, c, up, refs, first_ref, objects);
		first_ref += c->unknown->nrefs;
		gpointer hash = GUINT_TO_POINTER ((guint)mono_object_hash_internal (obj));
		e->next = g_hash_table_lookup (sp_unknown.by_hash, hash);
		g_hash_table_steal (sp_unknown.by_hash, hash);
		g_hash_table_insert (sp_unknown.by_hash, hash, e);
	}
	return 0;
}
