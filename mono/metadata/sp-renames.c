/*
 * sp-renames.c: classes under the names they had in earlier versions (part
 * of the client, see sp-mono-state.h; class evolution, docs/FORMAT.md).
 *
 * [SPersistent (FormerNames = new [] { "OldNs.Valve" })] says that a
 * snapshot's "OldNs.Valve" is this class now, whatever assembly either lives
 * in.  A restore reads the declarations once from the loaded assemblies that
 * use SPersistence (the others cannot have any), and rewrites every type name
 * of the snapshot with them: a class's own name, arrays of it ("OldNs.Valve[]"),
 * generic types over it ("List`1[[OldNs.Valve, v1, ...]]": the argument's
 * assembly follows it), and the declared types of reference fields.
 */

typedef struct SpRenames {
	GHashTable *by_former;       /* former full name -> MonoClass * (the names owned) */
	gboolean built;
	MonoImage *program;          /* the program's image (--sp-check sets it before it is the main one) */
} SpRenames;

static SpRenames sp_renames;

/* Does image use SPersistence (an assembly reference to it)?  Only those can declare former names. */
static gboolean
sp_renames_image_uses_us (MonoImage *image)
{
	int refs = mono_image_get_table_rows (image, MONO_TABLE_ASSEMBLYREF);
	for (int i = 0; i < refs; i++) {
		MonoAssemblyName aname = { 0 };
		mono_assembly_get_assemblyref (image, i, &aname);
		if (aname.name && strcmp (aname.name, "SPersistence") == 0)
			return TRUE;
	}
	return FALSE;
}

/* The former names one class declares, into the map; a name two classes claim is ambiguous and stays out. */
static void
sp_renames_add_class (MonoClass *klass)
{
	ERROR_DECL (error);
	char *former = NULL;
	SpError err = { 0 };
	if (sp_mono_attrs_former_names (mono_custom_attrs_from_class_checked (klass, error), error, "SPersistentAttribute",
					&former, &err) < 0 || !former) {
		g_free (former);
		return;
	}
	char **names = g_strsplit (former, "\n", -1);
	for (char **n = names; *n; n++) {
		MonoClass *other = (MonoClass *)g_hash_table_lookup (sp_renames.by_former, *n);
		g_hash_table_insert (sp_renames.by_former, g_strdup (*n), other && other != klass ? NULL : klass);
	}
	g_strfreev (names);
	g_free (former);
}

static void
sp_renames_add_assembly (gpointer data, gpointer user_data)
{
	(void)user_data;
	MonoImage *image = ((MonoAssembly *)data)->image;
	if (!image || !sp_renames_image_uses_us (image))
		return;
	int rows = mono_image_get_table_rows (image, MONO_TABLE_TYPEDEF);
	for (int i = 2; i <= rows; i++) {       /* row 1 is <Module> */
		ERROR_DECL (error);
		MonoClass *klass = mono_class_get_checked (image, MONO_TOKEN_TYPE_DEF | (guint32)i, error);
		mono_error_cleanup (error);
		if (klass)
			sp_renames_add_class (klass);
	}
}

/* The program's image: the main assembly's, or the one --sp-check is about before it is the main one. */
static MonoImage *
sp_renames_program (void)
{
	MonoAssembly *main_assembly = mono_assembly_get_main ();
	return sp_renames.program ? sp_renames.program : main_assembly ? main_assembly->image : NULL;
}

/*
 * The map, read once a process (a restore runs once): from the assemblies
 * loaded, the program's references first loaded too, so that a class moved
 * to another of the program's assemblies is found before it is first used.
 */
static GHashTable *
sp_renames_map (void)
{
	if (!sp_renames.built) {
		sp_renames.by_former = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
		MonoImage *program = sp_renames_program ();
		int refs = program ? mono_image_get_table_rows (program, MONO_TABLE_ASSEMBLYREF) : 0;
		for (int i = 0; i < refs; i++)
			mono_assembly_load_reference (program, i);
		mono_assembly_foreach (sp_renames_add_assembly, NULL);
		sp_renames.built = TRUE;
	}
	return sp_renames.by_former;
}

/* The class now declaring `former` (len bytes of it) as its former name, or NULL. */
static MonoClass *
sp_renames_lookup (const char *former, size_t len)
{
	GHashTable *map = sp_renames_map ();
	if (g_hash_table_size (map) == 0)
		return NULL;
	char *key = g_strndup (former, len);
	MonoClass *klass = (MonoClass *)g_hash_table_lookup (map, key);
	g_free (key);
	return klass;
}

/*
 * `name` (a reflection type name) with every type in it that a class now
 * declares as a former name replaced by that class's name, and an assembly
 * qualifier after a replaced generic argument by the class's assembly.  With
 * `qualify`, a replaced generic argument that had no qualifier ("List`1[Valve]",
 * found in the program's assembly) gets one ("List`1[[Site.Actuator, parts]]"),
 * since the class may live elsewhere now; without, the name stays in the
 * format the class map gives declared types (sp_mono_type_name).
 * *top: the class that replaced the whole name's first type, or NULL.
 * Returns NULL when nothing was replaced.
 */
static char *
sp_renames_rewrite (const char *name, gboolean qualify, MonoClass **top)
{
	GString *out = g_string_new (NULL);
	gboolean changed = FALSE;
	*top = NULL;
	const char *p = name;
	while (*p) {
		/*
		 * A type starts the name, and each generic argument: after a "[" that
		 * is not an array's ("List`1[Valve]", "List`1[[Valve, v1]]"), and after
		 * a "," that is not an assembly qualifier's (", "): "Dictionary`2[K,V]".
		 */
		gboolean starts = p == name || (p [-1] == '[' && *p != ']' && *p != ',' && *p != '[') || (p [-1] == ',' && *p != ' ');
		size_t len = starts ? strcspn (p, "[],") : 0;
		MonoClass *now = len ? sp_renames_lookup (p, len) : NULL;
		if (!now) {
			g_string_append_c (out, *p++);
			continue;
		}
		char *now_name = sp_mono_type_name (m_class_get_byval_arg (now));
		char *assembly = sp_mono_assembly_of (now);
		gboolean qualified_arg = p [-1] == '[' && p - name >= 2 && (p [-2] == '[' || p [-2] == ',');
		if (qualify && p != name && !qualified_arg)
			g_string_append_printf (out, "[%s, %s]", now_name, assembly);
		else
			g_string_append (out, now_name);
		changed = TRUE;
		if (p == name)
			*top = now;
		p += len;
		if (p [0] == ',' && p [1] == ' ') {    /* its assembly, up to the argument's "]" */
			g_string_append_printf (out, ", %s", assembly);
			p += strcspn (p, "]");
		}
		g_free (now_name);
		g_free (assembly);
	}
	return g_string_free (out, !changed);
}

/*
 * The declared types of sc's reference fields, as this program names them:
 * rewritten in place (the core's strings: malloc'd).  TRUE when any was.
 */
static gboolean
sp_renames_field_types (SpSnapClass *sc)
{
	gboolean any = FALSE;
	for (uint32_t i = 0; i < sc->nfields; i++) {
		SpField *f = &sc->fields [i];
		MonoClass *top;
		char *now = f->kind == SP_KIND_REF && f->type_name ? sp_renames_rewrite (f->type_name, FALSE, &top) : NULL;
		if (!now)
			continue;
		char *copy = strdup (now);
		g_free (now);
		if (!copy)
			continue;
		free ((char *)f->type_name);
		f->type_name = copy;
		any = TRUE;
	}
	return any;
}
