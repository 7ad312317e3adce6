/*
 * sp-classmap.c: the persistent class map (part of the client, see
 * sp-mono-state.h).  A class's map (SpClass: its persistent leaves, flattened
 * through structs, with offsets and kinds) is built from [SPersistent] and
 * [SPersistentField] the first time a class is persisted or restored, and
 * cached per MonoClass; a class that cannot be persisted is remembered with
 * its reason.  The serializer and the restore read objects through it only,
 * never through reflection.
 */

/* MonoClass* -> SpClass*, built once per class. */
static GHashTable *sp_class_maps;
static GHashTable *sp_class_map_failures;  /* MonoClass * -> why it cannot be persisted (it never changes) */
static SpClass sp_string_class = { .kind = SP_CLASS_STRING, .assembly = "mscorlib", .name = "System.String" };

/*
 * Classes found not to be persistable, for readers without sp_lock: the
 * store barrier skips an object of such a class without taking the lock (a
 * barrier on a closure, a list of the program's own, any object that is not
 * state, took the lock once per object and cycle, and made the SP task end
 * its increment early for it).  Direct-mapped, one class a slot: a class
 * pushed out is looked up under the lock again, as before.  Only permanent
 * failures enter it (sp_class_map_failures): a class that cannot be
 * persisted never becomes persistable.
 */
#define SP_UNPERSISTABLE_SLOTS 256
static MonoClass *sp_unpersistable [SP_UNPERSISTABLE_SLOTS];

static size_t
sp_unpersistable_slot (MonoClass *klass)
{
	return ((uintptr_t)klass >> 4) % SP_UNPERSISTABLE_SLOTS;
}

static gboolean
sp_mono_class_known_unpersistable (MonoClass *klass)
{
	return __atomic_load_n (&sp_unpersistable [sp_unpersistable_slot (klass)], __ATOMIC_RELAXED) == klass;
}

/* SPersistence.`name` in `attrs`, or NULL. */
static const MonoCustomAttrEntry *
sp_mono_attrs_find (MonoCustomAttrInfo *attrs, const char *name)
{
	for (int i = 0; attrs && i < attrs->num_attrs; i++) {
		MonoClass *k = attrs->attrs [i].ctor->klass;
		if (strcmp (m_class_get_name (k), name) == 0 && strcmp (m_class_get_name_space (k), "SPersistence") == 0)
			return &attrs->attrs [i];
	}
	return NULL;
}

static void
sp_mono_attrs_release (MonoCustomAttrInfo *attrs)
{
	if (attrs && !attrs->cached)
		mono_custom_attrs_free (attrs);
}

/* Does `attrs` hold SPersistence.`name`?  Consumes attrs (and the lookup's error). */
static gboolean
sp_mono_attrs_have (MonoCustomAttrInfo *attrs, MonoError *error, const char *name)
{
	mono_error_cleanup (error);
	gboolean found = sp_mono_attrs_find (attrs, name) != NULL;
	sp_mono_attrs_release (attrs);
	return found;
}

/*
 * The FormerNames of SPersistence.`name` in `attrs` ('\n'-joined, g_free it;
 * NULL: none), read from the attribute's blob (sp-cattr.h: nothing managed
 * is made).  Consumes attrs (and the lookup's error).
 */
static int
sp_mono_attrs_former_names (MonoCustomAttrInfo *attrs, MonoError *error, const char *name, char **out, SpError *err)
{
	mono_error_cleanup (error);
	*out = NULL;
	int rc = 0;
	const MonoCustomAttrEntry *e = sp_mono_attrs_find (attrs, name);
	char **names = NULL;
	int n = e ? sp_cattr_strings (e->data, e->data_size, "FormerNames", &names, err) : 0;
	if (n < 0)
		rc = sp_error_prefix (err, "its [%s]", name);
	else if (n > 0)
		*out = g_strjoinv ("\n", names);
	sp_cattr_strings_free (names);
	sp_mono_attrs_release (attrs);
	return rc;
}

static int
sp_mono_field_former_names (MonoClass *klass, MonoClassField *field, char **out, SpError *err)
{
	ERROR_DECL (error);
	int rc = sp_mono_attrs_former_names (mono_custom_attrs_from_field_checked (klass, field, error), error,
					     "SPersistentFieldAttribute", out, err);
	return rc < 0 ? sp_error_prefix (err, "field %s", mono_field_get_name (field)) : 0;
}

/*
 * [SPersistentField (Default = ...)] of field, whose leaves are leaves
 * [first...]: the value a restored object gets when the snapshot lacks the
 * field (sp_evolve_default_value says what may hold what).
 */
static int
sp_mono_field_default (MonoClass *klass, MonoClassField *field, GArray *leaves, guint first, SpError *err)
{
	ERROR_DECL (error);
	MonoCustomAttrInfo *attrs = mono_custom_attrs_from_field_checked (klass, field, error);
	mono_error_cleanup (error);
	const MonoCustomAttrEntry *e = sp_mono_attrs_find (attrs, "SPersistentFieldAttribute");
	uint8_t kind = 0, value [8];
	int rc = e ? sp_cattr_primitive (e->data, e->data_size, "Default", &kind, value, err) : 0;
	if (rc > 0 && (leaves->len != first + 1 || (&g_array_index (leaves, SpField, first))->kind == SP_KIND_REF)) {
		rc = sp_error_set (err, "a Default is for a field of a number, bool, char or enum type (a reference or a "
				   "struct starts null or zeroed, and its upgrade hook can set it)");
	} else if (rc > 0) {
		SpField *leaf = &g_array_index (leaves, SpField, first);
		uint8_t *out = g_malloc (8);
		rc = sp_evolve_default_value (leaf, kind, value, out, err);
		if (rc < 0)
			g_free (out);
		else
			leaf->default_value = out;
	}
	sp_mono_attrs_release (attrs);
	return rc < 0 ? sp_error_prefix (err, "field %s", mono_field_get_name (field)) : 0;
}

/* [SPersistent (DropUnknown = true)] on klass (not inherited: a class says it for its own fields). */
static gboolean
sp_mono_class_drops_unknown (MonoClass *klass)
{
	ERROR_DECL (error);
	MonoCustomAttrInfo *attrs = mono_custom_attrs_from_class_checked (klass, error);
	mono_error_cleanup (error);
	const MonoCustomAttrEntry *e = sp_mono_attrs_find (attrs, "SPersistentAttribute");
	bool drop = false;
	SpError unused = { 0 };
	/* A malformed blob was refused when the class map was built: nothing is kept for it then. */
	if (e && sp_cattr_bool (e->data, e->data_size, "DropUnknown", &drop, &unused) < 0)
		drop = true;
	sp_mono_attrs_release (attrs);
	return drop;
}

static gboolean
sp_mono_class_has_attr (MonoClass *klass, const char *name)
{
	ERROR_DECL (error);
	return sp_mono_attrs_have (mono_custom_attrs_from_class_checked (klass, error), error, name);
}

static gboolean
sp_mono_field_has_attr (MonoClass *klass, MonoClassField *field, const char *name)
{
	ERROR_DECL (error);
	return sp_mono_attrs_have (mono_custom_attrs_from_field_checked (klass, field, error), error, name);
}

/* [SPersistent] on the class or an ancestor (the attribute is inherited, as Inherited=true). */
static gboolean
sp_mono_is_persistent_class (MonoClass *klass)
{
	for (MonoClass *k = klass; k; k = m_class_get_parent (k))
		if (sp_mono_class_has_attr (k, "SPersistentAttribute"))
			return TRUE;
	return FALSE;
}

/*
 * Class-library collections persisted by their fields, as if they were
 * [SPersistent]: List<T> (_items, _size, _version) and Dictionary<K,V>
 * (_buckets, _entries, the counts, _version, and _comparer, which is null for
 * the default comparer: any other is an object that cannot be persisted, and
 * says so).  Not persisted: fields marked [NonSerialized], and a dictionary's
 * caches (_keys, _values, _syncRoot), created again when asked for.
 */
static char *sp_mono_type_name (MonoType *type);

static gboolean
sp_mono_is_corlib_generic (MonoClass *klass, const char *name)
{
	return mono_class_is_ginst (klass) && m_class_get_image (klass) == mono_defaults.corlib &&
		strcmp (m_class_get_name_space (klass), "System.Collections.Generic") == 0 &&
		strcmp (m_class_get_name (klass), name) == 0;
}

static gboolean
sp_mono_is_persistable_collection (MonoClass *klass)
{
	return sp_mono_is_corlib_generic (klass, "List`1") || sp_mono_is_corlib_generic (klass, "Dictionary`2");
}

/*
 * Class-library code that stores into a program's state: the collections
 * persisted by their fields, System.Array (Sort, Reverse, Fill, the
 * IList<T> of arrays), the sort helpers that write into the arrays they are
 * given, and the span and buffer code beneath them.  Whoever calls them, a
 * store of theirs lands in the state as if the caller had made it, so every
 * barrier mode guards them (sp_mono_method_needs_barrier).  Nested classes
 * count as their outermost class.
 */
gboolean
sp_mono_is_state_writing_library_class (MonoClass *klass)
{
	static const char *const generic [] = {
		"List`1", "Dictionary`2", "ArraySortHelper`1", "ArraySortHelper`2",
		"GenericArraySortHelper`1", "GenericArraySortHelper`2",
	};
	static const char *const system [] = { "Array", "Span`1", "SpanHelpers", "Buffer", "MemoryExtensions" };
	while (m_class_get_nested_in (klass))
		klass = m_class_get_nested_in (klass);
	if (m_class_get_image (klass) != mono_defaults.corlib)
		return FALSE;
	const char *ns = m_class_get_name_space (klass), *name = m_class_get_name (klass);
	if (strcmp (ns, "System.Collections.Generic") == 0) {
		for (size_t i = 0; i < G_N_ELEMENTS (generic); i++)
			if (strcmp (name, generic [i]) == 0)
				return TRUE;
	} else if (strcmp (ns, "System") == 0) {
		for (size_t i = 0; i < G_N_ELEMENTS (system); i++)
			if (strcmp (name, system [i]) == 0)
				return TRUE;
	}
	return FALSE;
}

/*
 * A dictionary's buckets hold its keys' hash codes: they must come out the
 * same in the next process.  So keys are primitive values, enums or strings
 * (Mono's string hash is not randomized: the same in every run of this
 * runtime); keys hashed by identity or by code of their own are refused.
 */
static int
sp_mono_dictionary_key_check (MonoClass *dict, SpError *err)
{
	MonoType *key = mono_class_get_generic_class (dict)->context.class_inst->type_argv [0];
	switch (key->type) {
	case MONO_TYPE_BOOLEAN: case MONO_TYPE_CHAR: case MONO_TYPE_I1: case MONO_TYPE_U1:
	case MONO_TYPE_I2: case MONO_TYPE_U2: case MONO_TYPE_I4: case MONO_TYPE_U4:
	case MONO_TYPE_I8: case MONO_TYPE_U8: case MONO_TYPE_R4: case MONO_TYPE_R8: case MONO_TYPE_STRING:
		return 0;
	case MONO_TYPE_VALUETYPE:
		if (m_class_is_enumtype (mono_class_from_mono_type_internal (key)))
			return 0;
		break;
	default:
		break;
	}
	char *name = sp_mono_type_name (m_class_get_byval_arg (dict));
	char *kname = sp_mono_type_name (key);
	sp_error_set (err, "%s cannot be persisted: its keys (%s) may hash differently after a restart "
		      "(keys of primitive, enum or string type can)", name, kname);
	g_free (name);
	g_free (kname);
	return -1;
}

static char *
sp_mono_type_name (MonoType *type)
{
	return mono_type_get_name_full (type, MONO_TYPE_NAME_FORMAT_REFLECTION);
}

static gboolean
sp_mono_is_instance_field (MonoClassField *f)
{
	return !(f->type->attrs & (FIELD_ATTRIBUTE_STATIC | FIELD_ATTRIBUTE_LITERAL));
}

static int
sp_mono_class_ref_allowed (MonoClass *klass, SpError *err)
{
	if (klass == mono_defaults.object_class || klass == mono_defaults.string_class ||
	    mono_class_is_interface (klass) || sp_mono_is_persistent_class (klass) || sp_mono_is_persistable_collection (klass))
		return 0;
	if (m_class_get_rank (klass) == 1 && m_class_get_byval_arg (klass)->type == MONO_TYPE_SZARRAY) {
		MonoClass *elem = m_class_get_element_class (klass);
		if (m_class_is_valuetype (elem))
			return 0;   /* its leaves are checked when the array's layout is built */
		return sp_mono_class_ref_allowed (elem, err);
	}
	char *name = sp_mono_type_name (m_class_get_byval_arg (klass));
	sp_error_set (err, "type %s is not [SPersistent]", name);
	g_free (name);
	return -1;
}

static int sp_mono_add_leaves (GArray *leaves, MonoType *type, const char *name, const char *alts, guint32 offset, SpError *err);

/* "a.b": a leaf's path; "b" at the top. */
static char *
sp_mono_leaf_path (const char *prefix, const char *member)
{
	return *prefix ? g_strdup_printf ("%s.%s", prefix, member) : g_strdup (member);
}

/*
 * The former full names of member `member` of the struct at `name` (whose
 * own former names are `alts`), the member's own being `member_alts`: every
 * combination of a name the struct had and a name the member had, but the
 * present one.  NULL: none.
 */
static char *
sp_mono_member_alts (const char *name, const char *alts, const char *member, const char *member_alts)
{
	if (!alts && !member_alts)
		return NULL;
	/* The present name first, then the former ones ("" at the top of an array's element is a name too). */
	char **ps = g_strsplit (alts ? alts : "", "\n", -1), **ms = g_strsplit (member_alts ? member_alts : "", "\n", -1);
	char *present = sp_mono_leaf_path (name, member);
	GString *out = g_string_new (NULL);
	for (int i = -1; i < 0 || ps [i]; i++) {
		for (int j = -1; j < 0 || ms [j]; j++) {
			char *path = sp_mono_leaf_path (i < 0 ? name : ps [i], j < 0 ? member : ms [j]);
			if (strcmp (path, present) != 0)
				g_string_append_printf (out, "%s%s", out->len ? "\n" : "", path);
			g_free (path);
		}
	}
	g_free (present);
	g_strfreev (ps), g_strfreev (ms);
	return g_string_free (out, out->len == 0);
}

/* Flatten the instance fields of a struct embedded at `offset` (its former names: alts). */
static int
sp_mono_add_struct_leaves (GArray *leaves, MonoClass *klass, const char *name, const char *alts, guint32 offset, SpError *err)
{
	mono_class_init_internal (klass);
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		if (!sp_mono_is_instance_field (f))
			continue;
		char *member_alts;
		if (sp_mono_field_former_names (klass, f, &member_alts, err) < 0)
			return -1;
		char *leaf = sp_mono_leaf_path (name, mono_field_get_name (f));
		char *leaf_alts = sp_mono_member_alts (name, alts, mono_field_get_name (f), member_alts);
		/* A struct's field offsets count the object header it has when boxed. */
		guint32 at = offset + (guint32)mono_field_get_offset (f) - (guint32)sizeof (MonoObject);
		int rc = sp_mono_add_leaves (leaves, f->type, leaf, leaf_alts, at, err);
		g_free (leaf), g_free (leaf_alts), g_free (member_alts);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int
sp_mono_add_leaf (GArray *leaves, const char *name, const char *alts, unsigned kind, guint32 offset, MonoType *ref_type)
{
	SpField leaf = { .name = g_strdup (name), .kind = (uint8_t)kind, .offset = offset, .former_names = g_strdup (alts) };
	if (ref_type) {
		leaf.type_name = sp_mono_type_name (ref_type);
		leaf.type_client = mono_class_from_mono_type_internal (ref_type);
	}
	g_array_append_val (leaves, leaf);
	return 0;
}

/* The leaves of a value of `type` stored at `offset` (a field, or an array element). */
static int
sp_mono_add_leaves (GArray *leaves, MonoType *type, const char *name, const char *alts, guint32 offset, SpError *err)
{
	static const uint8_t kinds [] = {
		[MONO_TYPE_BOOLEAN] = SP_KIND_BOOL, [MONO_TYPE_CHAR] = SP_KIND_CHAR,
		[MONO_TYPE_I1] = SP_KIND_I1, [MONO_TYPE_U1] = SP_KIND_U1,
		[MONO_TYPE_I2] = SP_KIND_I2, [MONO_TYPE_U2] = SP_KIND_U2,
		[MONO_TYPE_I4] = SP_KIND_I4, [MONO_TYPE_U4] = SP_KIND_U4,
		[MONO_TYPE_I8] = SP_KIND_I8, [MONO_TYPE_U8] = SP_KIND_U8,
		[MONO_TYPE_R4] = SP_KIND_R4, [MONO_TYPE_R8] = SP_KIND_R8,
	};
	if (type->byref)
		goto unsupported;
	if (type->type < G_N_ELEMENTS (kinds) && kinds [type->type])
		return sp_mono_add_leaf (leaves, name, alts, kinds [type->type], offset, NULL);
	switch (type->type) {
	case MONO_TYPE_STRING:
	case MONO_TYPE_CLASS:
	case MONO_TYPE_OBJECT:
	case MONO_TYPE_SZARRAY:
		return sp_mono_add_leaf (leaves, name, alts, SP_KIND_REF, offset, type);
	case MONO_TYPE_GENERICINST:
		if (!mono_type_generic_inst_is_valuetype (type))
			return sp_mono_add_leaf (leaves, name, alts, SP_KIND_REF, offset, type);
		/* a generic struct */
		/* FALLTHROUGH */
	case MONO_TYPE_VALUETYPE: {
		MonoClass *klass = mono_class_from_mono_type_internal (type);
		if (m_class_is_enumtype (klass))
			return sp_mono_add_leaves (leaves, mono_class_enum_basetype_internal (klass), name, alts, offset, err);
		return sp_mono_add_struct_leaves (leaves, klass, name, alts, offset, err);
	}
	default:
		break;
	}
unsupported: {
		char *tname = sp_mono_type_name (type);
		sp_error_set (err, "'%s' has type %s, which cannot be persisted (pointers, handles and multi-dimensional arrays are not supported)",
			      *name ? name : "element", tname);
		g_free (tname);
		return -1;
	}
}

static char *
sp_mono_assembly_of (MonoClass *klass)
{
	while (m_class_get_rank (klass))
		klass = m_class_get_element_class (klass);
	MonoAssembly *assembly = m_class_get_image (klass)->assembly;
	if (!assembly)
		return g_strdup ("");
	MonoAssemblyName *an = &assembly->aname;
	return g_strdup_printf ("%s, Version=%d.%d.%d.%d", an->name, an->major, an->minor, an->build, an->revision);
}

static SpClass *
sp_mono_class_new (MonoClass *klass, uint8_t kind, GArray *leaves)
{
	SpClass *c = g_new0 (SpClass, 1);
	c->kind = kind;
	c->assembly = sp_mono_assembly_of (klass);
	c->name = sp_mono_type_name (m_class_get_byval_arg (klass));
	c->nfields = leaves->len;
	c->fields = (SpField *)g_array_free (leaves, FALSE);
	c->client = klass;
	c->drop_unknown = kind == SP_CLASS_OBJECT && sp_mono_class_drops_unknown (klass);
	return c;
}

static void
sp_mono_leaves_free (GArray *leaves)
{
	for (guint i = 0; i < leaves->len; i++) {
		SpField *f = &g_array_index (leaves, SpField, i);
		g_free ((char *)f->name);
		g_free ((char *)f->type_name);
		g_free ((char *)f->former_names);
		g_free ((uint8_t *)f->default_value);
	}
	g_array_free (leaves, TRUE);
}

/* Persistent fields, base class first, so a derived class extends its base's layout. */
static int
sp_mono_object_leaves (GArray *leaves, MonoClass *klass, SpError *err)
{
	MonoClass *parent = m_class_get_parent (klass);
	if (parent && sp_mono_object_leaves (leaves, parent, err) < 0)
		return -1;
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		if (!sp_mono_is_instance_field (f) || !sp_mono_field_has_attr (klass, f, "SPersistentFieldAttribute"))
			continue;
		char *alts;
		guint first = leaves->len;
		int rc = sp_mono_field_former_names (klass, f, &alts, err);
		if (rc == 0)
			rc = sp_mono_add_leaves (leaves, f->type, mono_field_get_name (f), alts, (guint32)mono_field_get_offset (f), err);
		if (rc == 0)
			rc = sp_mono_field_default (klass, f, leaves, first, err);
		g_free (alts);
		if (rc < 0)
			return sp_error_prefix (err, "class %s", m_class_get_name (klass));
	}
	return 0;
}

/* A collection's fields, but those sp_mono_is_persistable_collection says are not persisted. */
static int
sp_mono_collection_leaves (GArray *leaves, MonoClass *klass, SpError *err)
{
	if (sp_mono_is_corlib_generic (klass, "Dictionary`2") && sp_mono_dictionary_key_check (klass, err) < 0)
		return -1;
	gpointer iter = NULL;
	MonoClassField *f;
	while ((f = mono_class_get_fields_internal (klass, &iter))) {
		const char *fname = mono_field_get_name (f);
		if (!sp_mono_is_instance_field (f) || (f->type->attrs & FIELD_ATTRIBUTE_NOT_SERIALIZED) ||
		    strcmp (fname, "_keys") == 0 || strcmp (fname, "_values") == 0 || strcmp (fname, "_syncRoot") == 0)
			continue;
		if (sp_mono_add_leaves (leaves, f->type, mono_field_get_name (f), NULL, (guint32)mono_field_get_offset (f), err) < 0)
			return sp_error_prefix (err, "class %s", m_class_get_name (klass));
	}
	return 0;
}

static SpClass *
sp_mono_class_map_build (MonoClass *klass, SpError *err)
{
	mono_class_init_internal (klass);
	GArray *leaves = g_array_new (FALSE, TRUE, sizeof (SpField));
	char *name = sp_mono_type_name (m_class_get_byval_arg (klass));
	int rc;
	uint8_t kind;
	if (m_class_get_rank (klass)) {
		kind = SP_CLASS_ARRAY;
		if (m_class_get_byval_arg (klass)->type != MONO_TYPE_SZARRAY)
			rc = sp_error_set (err, "type %s is a multi-dimensional array, which cannot be persisted", name);
		else if ((rc = sp_mono_class_ref_allowed (klass, err)) == 0)
			rc = sp_mono_add_leaves (leaves, m_class_get_byval_arg (m_class_get_element_class (klass)), "", NULL, 0, err);
	} else if (m_class_is_valuetype (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_error_set (err, "a boxed %s cannot be persisted; store it in a field of its own type", name);
	} else if (sp_mono_is_persistable_collection (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_mono_collection_leaves (leaves, klass, err);
	} else if (!sp_mono_is_persistent_class (klass)) {
		kind = SP_CLASS_OBJECT;
		rc = sp_error_set (err, "type %s is not [SPersistent]", name);
	} else {
		kind = SP_CLASS_OBJECT;
		rc = sp_mono_object_leaves (leaves, klass, err);
	}
	g_free (name);
	if (rc < 0) {
		sp_mono_leaves_free (leaves);
		return NULL;
	}
	SpClass *c = sp_mono_class_new (klass, kind, leaves);
	if (kind == SP_CLASS_ARRAY)
		c->elem_size = (uint32_t)mono_array_element_size (klass);
	else
		c->lid_slot = sp_mono_identity_slot_of (klass);
	return c;
}

/*
 * While the world is stopped, a class map is not built: building reads
 * metadata under the loader lock, which a stopped thread may hold.  A class
 * without a map then fails the lookup and is remembered, and the cycle's start
 * builds its map with the world running and tries again.
 */
static gboolean sp_class_maps_frozen;
static MonoClass *sp_class_map_needed;

static SpClass *sp_mono_class_map (MonoClass *klass, SpError *err);

/*
 * Build the maps of the classes c's references are declared with, and theirs
 * (as the paper builds a class's map when the class is loaded): a snapshot
 * then seldom meets a class without a map, whose building (metadata, custom
 * attributes) would lengthen an increment of the SP task.  Declared types
 * only: a subclass, or what an `object` field holds, gets its map when met.
 */
static void
sp_mono_class_map_prepare_fields (const SpClass *c)
{
	for (uint32_t i = 0; i < c->nfields; i++) {
		MonoClass *declared = (MonoClass *)c->fields [i].type_client;
		if (!declared || declared == mono_defaults.object_class || mono_class_is_interface (declared))
			continue;
		if (g_hash_table_lookup (sp_class_maps, declared) || g_hash_table_lookup (sp_class_map_failures, declared))
			continue;
		SpError ignored = { 0 };
		sp_mono_class_map (declared, &ignored);
	}
}

/* The class map of klass, built on first use.  Called with sp_lock held. */
static SpClass *
sp_mono_class_map (MonoClass *klass, SpError *err)
{
	if (klass == mono_defaults.string_class)
		return &sp_string_class;
	SpClass *c = (SpClass *)g_hash_table_lookup (sp_class_maps, klass);
	if (c)
		return c;
	const char *why = (const char *)g_hash_table_lookup (sp_class_map_failures, klass);
	if (why) {
		sp_error_set (err, "%s", why);
		return NULL;
	}
	if (sp_class_maps_frozen) {
		sp_class_map_needed = klass;
		sp_error_set (err, "a class map is needed while the world is stopped");
		return NULL;
	}
	c = sp_mono_class_map_build (klass, err);
	if (c) {
		g_hash_table_insert (sp_class_maps, klass, c);
		sp_mono_class_map_prepare_fields (c);   /* after the insertion: a class referring to itself is done */
	} else {
		g_hash_table_insert (sp_class_map_failures, klass, g_strdup (err->msg));
		__atomic_store_n (&sp_unpersistable [sp_unpersistable_slot (klass)], klass, __ATOMIC_RELAXED);
	}
	return c;
}
