/*
 * sp-upgrade.c: the upgrade hook (part of the client, see sp-mono-state.h;
 * SPersistence.ISPersistentUpgrade, docs/FORMAT.md "Class evolution").
 *
 * While a restore decodes, the old values of the changed leaves of every
 * object whose class changed and implements ISPersistentUpgrade are kept
 * (by LID: a delta's later record of the object replaces them).  Once the
 * restore succeeded they become one managed array, five entries an object
 * (the object, its class's name in the snapshot, what changed, the old
 * leaves' names, their values boxed in their old types or the objects old
 * references named), which the first SPC call takes (sp_take_upgrades) and
 * runs the hooks with, outside sp_lock.
 */

typedef struct SpOldLeaf {
	char *name;
	uint8_t kind;
	uint8_t bytes [8];           /* a primitive's value, host order */
	uint32_t lid;                /* a reference's target */
} SpOldLeaf;

typedef struct SpUpgrade {
	uint32_t lid;
	char *former;                /* the class's name in the snapshot */
	char *changes;
	GArray *leaves;              /* SpOldLeaf */
} SpUpgrade;

typedef struct SpUpgrades {
	GPtrArray *list;             /* SpUpgrade *, in restore order */
	GHashTable *by_lid;          /* lid -> SpUpgrade * */
} SpUpgrades;

/* The hooks the last restore left for the program (a managed object[]), 0: none. */
static guint32 sp_upgrades_handle;

/* Does klass (or an ancestor) implement SPersistence.ISPersistentUpgrade? */
static gboolean
sp_upgrades_wanted (MonoClass *klass)
{
	for (MonoClass *k = klass; k; k = m_class_get_parent (k)) {
		gpointer iter = NULL;
		MonoClass *iface;
		while ((iface = mono_class_get_interfaces (k, &iter)))
			if (strcmp (m_class_get_name (iface), "ISPersistentUpgrade") == 0 &&
			    strcmp (m_class_get_name_space (iface), "SPersistence") == 0)
				return TRUE;
	}
	return FALSE;
}

static void
sp_upgrade_leaves_clear (GArray *leaves)
{
	for (guint i = 0; i < leaves->len; i++)
		g_free ((&g_array_index (leaves, SpOldLeaf, i))->name);
	g_array_set_size (leaves, 0);
}

static void
sp_upgrade_free (gpointer data)
{
	SpUpgrade *u = (SpUpgrade *)data;
	sp_upgrade_leaves_clear (u->leaves);
	g_array_free (u->leaves, TRUE);
	g_free (u->former);
	g_free (u->changes);
	g_free (u);
}

static void
sp_upgrades_free (SpUpgrades *ups)
{
	if (ups->by_lid)
		g_hash_table_destroy (ups->by_lid);
	for (guint i = 0; ups->list && i < ups->list->len; i++)
		sp_upgrade_free (g_ptr_array_index (ups->list, i));
	if (ups->list)
		g_ptr_array_free (ups->list, TRUE);
	*ups = (SpUpgrades){ 0 };
}

static void
sp_upgrades_keep_leaf (void *ctx, const SpField *leaf, const uint8_t *value, uint32_t lid)
{
	SpOldLeaf old = { .name = g_strdup (leaf->name), .kind = leaf->kind, .lid = lid };
	if (value)
		sp_kind_copy (old.bytes, value, leaf->kind);
	g_array_append_val ((GArray *)ctx, old);
}

/* Object lid's record, of changed class c: its old leaves, kept (a later record's replace an earlier one's). */
static void
sp_upgrades_note (SpUpgrades *ups, uint32_t lid, const SpSnapClass *c, const uint8_t *values)
{
	if (!ups->list) {
		ups->list = g_ptr_array_new ();
		ups->by_lid = g_hash_table_new (NULL, NULL);
	}
	SpUpgrade *u = (SpUpgrade *)g_hash_table_lookup (ups->by_lid, GUINT_TO_POINTER (lid));
	if (!u) {
		u = g_new0 (SpUpgrade, 1);
		u->lid = lid;
		u->leaves = g_array_new (FALSE, TRUE, sizeof (SpOldLeaf));
		g_ptr_array_add (ups->list, u);
		g_hash_table_insert (ups->by_lid, GUINT_TO_POINTER (lid), u);
	}
	g_free (u->former);
	g_free (u->changes);
	u->former = g_strdup (c->name);
	u->changes = g_strdup (c->evolution);
	sp_upgrade_leaves_clear (u->leaves);
	sp_evolve_old_leaves (c, values, sp_upgrades_keep_leaf, u->leaves);
}

/* A primitive's old value, boxed in its old type. */
static MonoObject *
sp_upgrades_box (const SpOldLeaf *old, MonoError *error)
{
	MonoClass *const classes [SP_KIND_LAST + 1] = {
		[SP_KIND_BOOL] = mono_defaults.boolean_class, [SP_KIND_CHAR] = mono_defaults.char_class,
		[SP_KIND_I1] = mono_defaults.sbyte_class, [SP_KIND_U1] = mono_defaults.byte_class,
		[SP_KIND_I2] = mono_defaults.int16_class, [SP_KIND_U2] = mono_defaults.uint16_class,
		[SP_KIND_I4] = mono_defaults.int32_class, [SP_KIND_U4] = mono_defaults.uint32_class,
		[SP_KIND_I8] = mono_defaults.int64_class, [SP_KIND_U8] = mono_defaults.uint64_class,
		[SP_KIND_R4] = mono_defaults.single_class, [SP_KIND_R8] = mono_defaults.double_class,
	};
	return mono_value_box_checked (mono_domain_get (), classes [old->kind], (gpointer)old->bytes, error);
}

/* One object's five entries, from index i of out. */
static int
sp_upgrades_entry (MonoArray *out, guint i, const SpUpgrade *u, const SpObjects *objects, SpError *err)
{
	ERROR_DECL (error);
	MonoDomain *domain = mono_domain_get ();
	MonoArray *names = mono_array_new_checked (domain, mono_defaults.string_class, u->leaves->len, error);
	MonoArray *values = is_ok (error) ? mono_array_new_checked (domain, mono_defaults.object_class, u->leaves->len, error) : NULL;
	MonoString *former = is_ok (error) ? mono_string_new_checked (domain, u->former, error) : NULL;
	MonoString *changes = is_ok (error) ? mono_string_new_checked (domain, u->changes, error) : NULL;
	for (guint k = 0; is_ok (error) && k < u->leaves->len; k++) {
		const SpOldLeaf *old = &g_array_index (u->leaves, SpOldLeaf, k);
		MonoString *name = mono_string_new_checked (domain, old->name, error);
		if (!is_ok (error))
			break;
		mono_array_setref_fast (names, k, name);
		MonoObject *value = old->kind == SP_KIND_REF ? sp_objects_get (objects, old->lid)
			: sp_upgrades_box (old, error);
		mono_array_setref_fast (values, k, value);
	}
	if (!is_ok (error)) {
		sp_error_set (err, "out of memory for the upgrade of restored objects: %s", mono_error_get_message (error));
		mono_error_cleanup (error);
		return -1;
	}
	mono_array_setref_fast (out, i, sp_objects_get (objects, u->lid));
	mono_array_setref_fast (out, i + 1, former);
	mono_array_setref_fast (out, i + 2, changes);
	mono_array_setref_fast (out, i + 3, names);
	mono_array_setref_fast (out, i + 4, values);
	return 0;
}

/* The restore succeeded: its hooks are the program's (a restore that runs again replaces them). */
static int
sp_upgrades_publish (SpUpgrades *ups, const SpObjects *objects, SpError *err)
{
	if (sp_upgrades_handle)
		mono_gchandle_free_internal (sp_upgrades_handle);
	sp_upgrades_handle = 0;
	if (!ups->list || ups->list->len == 0)
		return 0;
	ERROR_DECL (error);
	MonoArray *out = mono_array_new_checked (mono_domain_get (), mono_defaults.object_class, (uintptr_t)ups->list->len * 5, error);
	if (!is_ok (error)) {
		mono_error_cleanup (error);
		return sp_error_set (err, "out of memory for the upgrade of %u restored objects", ups->list->len);
	}
	guint32 handle = mono_gchandle_new_internal ((MonoObject *)out, FALSE);
	for (guint i = 0; i < ups->list->len; i++) {
		if (sp_upgrades_entry (out, i * 5, (SpUpgrade *)g_ptr_array_index (ups->list, i), objects, err) < 0) {
			mono_gchandle_free_internal (handle);
			return -1;
		}
	}
	sp_upgrades_handle = handle;
	return 0;
}
