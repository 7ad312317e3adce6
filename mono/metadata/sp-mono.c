/*
 * sp-mono.c: the client's entry points (see sp-mono-state.h for the files
 * beside it): starting (the store opened and the newest snapshot restored,
 * lazily, by the first SPC call), SendPData in stop-the-world mode (on the
 * calling thread, start to finish), the internal calls behind
 * SPersistence.SPC (each returns NULL or an error message, which the managed
 * side throws as an SPersistenceException), and the driver's hooks
 * (sp-mono.h).  Incremental mode's SendPData is sp-cycle.c's.
 */

/* ---- starting: store and warm restart -------------------------------------- */

static int
sp_mono_start (SpError *err)
{
	if (sp_started)
		return 0;
	uint64_t t0 = sp_mono_monotonic_ns ();
	char *location = sp_options_store_location (&sp_options, sp_program);
	int rc = sp_store_open (location, sp_options.keep, &sp_store, err);
	free (location);
	if (rc < 0)
		return -1;
	if (sp_options.delta && strcmp (sp_store->ops->name, "pmem") == 0) {
		sp_error_set (err, "--sp-delta=on needs a file store: the pmem store keeps 2 snapshots in place, not a chain");
		sp_store_close (sp_store);
		sp_store = NULL;
		return -1;
	}
	SpLoaded loaded;
	/*
	 * Damaged snapshots are skipped (with a warning) in favour of older ones.  A
	 * snapshot that is intact but does not fit the program (a class changed or
	 * is missing) is an error: a cold start would silently lose the state.
	 */
	if (sp_store_load_newest (sp_store, sp_mono_restore, NULL, sp_mono_warn, NULL, &loaded, err) < 0) {
		sp_store_close (sp_store);
		sp_store = NULL;
		return -1;
	}
	uint64_t seq = loaded.sequence;
	sp_warm = loaded.n != 0;
	if (sp_warm) {
		sp_stats [SP_STAT_RESTORED_SEQUENCE] = (gint64)seq;
		sp_stats [SP_STAT_RESTORED_BYTES] = (gint64)loaded.bytes;
		/*
		 * The state is known now: its LID table is made here, part of the
		 * restart, rather than grown by the first cycle, where each chunk is
		 * an allocation that can start a collection in the middle of the
		 * program's periods (docs/INCREMENTAL.md, "Not covered yet").  A
		 * cold start learns the state's size from its first cycle.
		 */
		uint64_t objects = (uint64_t)sp_stats [SP_STAT_RESTORED_OBJECTS];
		SpError ignored = { 0 };
		if (sp_options.mode == SP_MODE_INCREMENTAL && objects < UINT32_MAX / 2)
			sp_mono_lid_table_grow ((uint32_t)(objects + objects / 4 + 1024), &ignored);
	}
	sp_store_release_loaded (sp_store, &loaded);
	sp_stats [SP_STAT_RESTORE_NS] = (gint64)(sp_mono_monotonic_ns () - t0);
	if (sp_warm && sp_options.verbose)
		fprintf (stderr, "spmono: warm restart from snapshot %llu in %s\n", (unsigned long long)seq, sp_store->location);
	sp_delta_arm ();
	if (sp_fold_start ())
		sp_delta_fold_started ();
	sp_started = TRUE;
	return 0;
}

/* ---- SendPData ----------------------------------------------------------- */

/*
 * Stop-the-world: serialize on this thread, and stream every chunk the
 * serializer fills (--sp-buffer) to the store as it fills it, so that the
 * snapshot is never held whole (one buffer: there is no one to hand the
 * other to).  Long strings and arrays go in pieces, as in incremental mode:
 * both modes write the same bytes for the same state.  *ser_ns: the time
 * spent serializing (the rest, opening, writing and committing, is the
 * store's).
 */
static int
sp_mono_stream_all (uint64_t seq, gboolean delta, SpStream *st, uint64_t *ser_ns, SpError *err)
{
	SpSnapHeader h = { .sequence = seq, .time_ns = sp_mono_now_ns () };
	uint64_t t = sp_mono_monotonic_ns (), store_ns = 0;
	sp_ser.whole_objects = FALSE;
	sp_ser_set_chunk (&sp_ser, sp_options.buffer);
	if (delta)
		sp_delta_header (&h);
	if ((delta ? sp_ser_begin_delta (&sp_ser, &sp_out, &h, err) : sp_ser_begin (&sp_ser, &sp_out, &h, err)) < 0)
		return -1;
	if (delta)
		sp_delta_give_taken ();
	/* Opening the snapshot's file (or region) is the store's: it counts with the writes. */
	uint64_t t_begin = sp_mono_monotonic_ns ();
	if (sp_stream_begin (st, sp_store, seq, (uint64_t)sp_stats [SP_STAT_LAST_BYTES], err) < 0)
		return -1;
	store_ns += sp_mono_monotonic_ns () - t_begin;
	int rc = 0;
	for (guint i = 0; i < sp_roots->len && rc == 0; i++) {
		SpRoot *root = sp_mono_root_at (i);
		rc = sp_ser_root (&sp_ser, root->id, mono_gchandle_get_target_internal (root->handle), err);
	}
	gboolean closed = FALSE;
	while (rc == 0 && !closed) {
		if ((rc = sp_ser_step (&sp_ser, 64, err)) == 0) {
			rc = sp_ser_close (&sp_ser, err);
			closed = TRUE;
		}
		if (rc >= 0 && (closed || sp_out.len >= sp_options.buffer)) {
			uint64_t t0 = sp_mono_monotonic_ns ();
			rc = sp_stream_write (st, sp_out.data, sp_out.len, closed, err);
			sp_ser_handed_on (&sp_ser, sp_out.len);
			sp_buf_reset (&sp_out);
			store_ns += sp_mono_monotonic_ns () - t0;
		} else if (rc == 1) {
			rc = 0;
		}
	}
	/* A chain keeps its LIDs for the next delta; otherwise the objects are let go now. */
	if (!sp_options.delta)
		sp_client_lid_reset ();
	*ser_ns = sp_mono_monotonic_ns () - t - store_ns;
	if (rc < 0)
		sp_stream_abort (st);
	return rc < 0 ? -1 : 0;
}

/* SendPData, stop-the-world: serialize on this thread, streaming to the store, then commit.  Called with the store started. */
static int
sp_mono_send (SpError *err)
{
	uint64_t t0 = sp_mono_monotonic_ns (), ser_ns = 0;
	uint64_t seq = sp_store_next_sequence (sp_store);
	SpStream st;
	/* With --sp-delta: what changed since the last snapshot, taken at this instant; a delta when the chain allows. */
	gboolean delta = FALSE;
	if (sp_options.delta) {
		uint64_t t_take = sp_mono_monotonic_ns ();
		sp_delta_take ();
		sp_trace_run ("delta-take", t_take, sp_mono_monotonic_ns ());
	}
	sp_fold_sync ();
	/* The store's state is this thread's until the commit is recorded (the fold task retires old snapshots). */
	uint64_t t_lock = sp_mono_monotonic_ns ();
	sp_fold_store_lock ();
	sp_trace_run ("store-lock", t_lock, sp_mono_monotonic_ns ());
	if (sp_options.delta) {
		sp_delta_take_fold ();
		delta = sp_delta_next_is_delta ();
	}
	int rc = sp_mono_stream_all (seq, delta, &st, &ser_ns, err) < 0 || sp_stream_finish (&st, err) < 0 ? -1 : 0;
	if (sp_options.delta)
		sp_delta_clear_taken ();
	if (rc < 0) {
		sp_fold_store_unlock ();
		sp_stats [SP_STAT_FAILURES]++;
		sp_delta_failed ();
		return sp_error_prefix (err, "SendPData");
	}
	sp_delta_committed (seq, delta, st.bytes, st.crc);
	sp_fold_store_unlock ();
	sp_trace_run (delta ? "delta" : "snapshot", t0, sp_mono_monotonic_ns ());
	if (!sp_fold_retire_later ())
		while (sp_store_retire (sp_store, UINT64_MAX))
			;
	uint64_t total_ns = sp_mono_monotonic_ns () - t0;
	sp_stats [SP_STAT_SNAPSHOTS]++;
	sp_stats [SP_STAT_LAST_SEQUENCE] = (gint64)seq;
	sp_stats [SP_STAT_LAST_OBJECTS] = (gint64)sp_ser.objects_written;
	sp_stats [SP_STAT_LAST_BYTES] = (gint64)st.bytes;
	sp_stats [SP_STAT_LAST_SERIALIZE_NS] = (gint64)ser_ns;
	sp_stats [SP_STAT_LAST_COMMIT_NS] = (gint64)(total_ns - ser_ns);
	if (sp_options.verbose)
		fprintf (stderr, "spmono: %s %llu: %llu objects, %llu bytes, serialized in %.3f ms, written and committed in %.3f ms\n",
			 delta ? "delta" : "snapshot", (unsigned long long)seq, (unsigned long long)sp_ser.objects_written, (unsigned long long)st.bytes,
			 ser_ns / 1e6, (total_ns - ser_ns) / 1e6);
	/* Keep a chunk's worth between snapshots, not more (a large object may have grown it). */
	if (sp_out.cap > 2 * (size_t)sp_options.buffer + (1u << 20))
		sp_buf_free (&sp_out);
	return 0;
}

/* ---- --sp-check: does the newest snapshot restore into this program? ------- */

/*
 * The dry run of an upgrade: once the program's assembly is loaded (its
 * classes can be resolved), the newest snapshot is decoded as a restore
 * would (every record validated, every object made, nothing kept as the
 * state), each class change said with the rule applied, and spmono exits
 * without running the program: 0 when it restores (or there is none), 1
 * when not.  The store is opened read-only, so a running program keeps it.
 */
static int
sp_mono_check_accept (void *ctx, const SpChainPart *parts, size_t n, size_t *failed, SpError *err)
{
	(void)ctx;
	return sp_mono_decode (parts, n, FALSE, stdout, failed, err);
}

static void
sp_mono_check_warn (void *ctx, const char *message)
{
	(void)ctx;
	printf ("spmono: %s\n", message);
}

static int
sp_mono_check (SpError *err)
{
	char *location = sp_options_store_location (&sp_options, sp_program);
	SpStore *store;
	int rc = sp_store_open_readonly (location, &store, err);
	if (rc == 0) {
		SpLoaded loaded;
		rc = sp_store_load_newest (store, sp_mono_check_accept, NULL, sp_mono_check_warn, NULL, &loaded, err);
		if (rc == 0 && loaded.n == 0)
			printf ("spmono: %s holds no snapshot: the program would start cold\n", location);
		else if (rc == 0)
			printf ("spmono: snapshot %llu of %s restores into %s\n", (unsigned long long)loaded.sequence, location, sp_program);
		if (rc == 0)
			sp_store_release_loaded (store, &loaded);
		sp_store_close (store);
	}
	free (location);
	return rc;
}

static void
sp_mono_check_on_load (MonoAssemblyLoadContext *alc, MonoAssembly *assembly, gpointer user_data, MonoError *error)
{
	(void)alc, (void)user_data, (void)error;
	char *loaded = assembly->image ? realpath (assembly->image->name, NULL) : NULL;
	char *program = realpath (sp_program, NULL);
	gboolean ours = loaded && program && strcmp (loaded, program) == 0;
	free (loaded);
	free (program);
	if (!ours)
		return;
	sp_renames.program = assembly->image;
	SpError err = { 0 };
	int rc = sp_mono_check (&err);
	if (rc < 0)
		printf ("spmono: %s does not restore: %s\n", sp_program, err.msg);
	fflush (stdout);
	exit (rc < 0 ? 1 : 0);
}

/* ---- internal calls -------------------------------------------------------- */

/*
 * Every internal call runs under sp_lock, with the store open and the newest
 * snapshot restored (sp_mono_enter), and returns NULL or the error message
 * (sp_mono_leave), which SPC throws as an SPersistenceException.
 */
static int
sp_mono_enter (SpError *err)
{
	mono_coop_mutex_lock (&sp_lock);
	return sp_mono_start (err);
}

static MonoString *
sp_mono_leave (int rc, const SpError *err)
{
	mono_coop_mutex_unlock (&sp_lock);
	if (rc == 0)
		return NULL;
	ERROR_DECL (error);
	MonoString *msg = mono_string_new_checked (mono_domain_get (), err->msg, error);
	mono_error_cleanup (error);
	return msg;
}

/* A root was added after a warm restart (sp_mono_warn_unreceived_roots looks then, and only then). */
static gboolean sp_roots_added_warm;

static MonoString *
sp_icall_add_root (MonoObject *root, gint32 *id)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0 && sp_next_root_id > SP_MAX_ROOT_ID)
		rc = sp_error_set (&err, "no root ids left (%u were handed out)", SP_MAX_ROOT_ID);
	if (rc == 0) {
		sp_roots_added_warm |= sp_warm;
		SpRoot entry = { sp_next_root_id++, mono_gchandle_new_internal (root, FALSE), FALSE, FALSE };
		g_array_append_val (sp_roots, entry);
		*id = (gint32)entry.id;
	}
	return sp_mono_leave (rc, &err);
}

/* The index of root `id` in sp_roots (binary search), or -1 and err. */
static int
sp_mono_root_index (gint32 id, SpError *err)
{
	guint lo = 0, hi = sp_roots->len;
	while (lo < hi) {
		guint mid = lo + (hi - lo) / 2;
		guint32 at = sp_mono_root_at (mid)->id;
		if (at == (guint32)id && id > 0)
			return (int)mid;
		if (at < (guint32)id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return sp_error_set (err, "there is no persistent root with id %d", id);
}

static MonoString *
sp_icall_remove_root (gint32 id)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	int index = rc == 0 ? sp_mono_root_index (id, &err) : -1;
	if (index >= 0) {
		mono_gchandle_free_internal (sp_mono_root_at ((guint)index)->handle);
		g_array_remove_index (sp_roots, (guint)index);
	}
	return sp_mono_leave (index >= 0 ? 0 : -1, &err);
}

static MonoString *
sp_icall_recv (gint32 id, MonoObject **root)
{
	SpError err = { 0 };
	*root = NULL;
	int rc = sp_mono_enter (&err);
	int index = rc == 0 ? sp_mono_root_index (id, &err) : -1;
	if (index >= 0) {
		*root = mono_gchandle_get_target_internal (sp_mono_root_at ((guint)index)->handle);
		sp_mono_root_at ((guint)index)->received = TRUE;
	}
	return sp_mono_leave (index >= 0 ? 0 : -1, &err);
}

/* SPC.sp_take_upgrades: the hooks the restore left, once (NULL: none). */
static MonoString *
sp_icall_take_upgrades (MonoArray **pending)
{
	SpError err = { 0 };
	*pending = NULL;
	int rc = sp_mono_enter (&err);
	if (rc == 0 && sp_upgrades_handle) {
		*pending = (MonoArray *)mono_gchandle_get_target_internal (sp_upgrades_handle);
		mono_gchandle_free_internal (sp_upgrades_handle);
		sp_upgrades_handle = 0;
	}
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_is_warm (MonoBoolean *warm)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	*warm = rc == 0 && sp_warm;
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_is_primary (MonoBoolean *primary)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	*primary = rc == 0 && !(sp_store && sp_store->fenced);
	return sp_mono_leave (rc, &err);
}

/*
 * Under sp_lock, at a SendPData: after a warm restart, a program that added
 * roots of its own but never received some restored ones (RecvPData) keeps
 * both, and one that adds its roots at every start, whatever IsWarmRestart
 * says, then persists one more copy of its state each restart, silently.
 * Said once: ids and what to do instead.  (Keeping a restored root without
 * receiving it is legal; RemoveRoot ends it.)
 */
static void
sp_mono_warn_unreceived_roots (void)
{
	static gboolean looked;
	guint unreceived = 0, added = 0, first_unreceived = 0, first_added = 0;
	/* Once, at the first SendPData after a root was added (receiving can only shrink what is unreceived). */
	if (looked || !sp_roots_added_warm)
		return;
	looked = TRUE;
	for (guint i = 0; i < sp_roots->len; i++) {
		const SpRoot *root = sp_mono_root_at (i);
		if (root->restored && !root->received && !unreceived++)
			first_unreceived = root->id;
		if (!root->restored && !added++)
			first_added = root->id;
	}
	if (!unreceived || !added)
		return;
	fprintf (stderr, "spmono: warning: this run added %u root(s) (id %u first) with SPC.AddRoot, but did not receive %u "
		 "restored root(s) (id %u first) with SPC.RecvPData: the snapshot keeps both, so a program that adds its roots "
		 "at every start keeps one more copy of its state each restart. After a warm restart (SPC.IsWarmRestart ()), "
		 "receive the restored roots with SPC.RecvPData (id) instead of adding new ones, or drop those no longer "
		 "needed with SPC.RemoveRoot (id) (said once)\n", added, first_added, unreceived, first_unreceived);
}

static MonoString *
sp_icall_send (void)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		sp_mono_warn_unreceived_roots ();
	if (rc == 0)
		rc = sp_options.mode == SP_MODE_INCREMENTAL ? sp_cycle_request (&err) : sp_mono_send (&err);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_wait (void)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		rc = sp_cycle_wait (&err);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_stats (MonoArray *out)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	for (int i = 0; rc == 0 && i < SP_STAT_COUNT && (uintptr_t)i < mono_array_length_internal (out); i++)
		mono_array_set_fast (out, gint64, i, sp_stats [i]);
	return sp_mono_leave (rc, &err);
}

static MonoString *
sp_icall_pause_histogram (MonoArray *out, MonoBoolean reset)
{
	SpError err = { 0 };
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		sp_cycle_pause_histogram (out, reset);
	return sp_mono_leave (rc, &err);
}

/*
 * For benchmarks: decode the newest snapshot again into new objects, which are
 * dropped, and report how long that took (the decode figure of a warm process).
 */
static MonoString *
sp_icall_bench_decode (gint64 *ns)
{
	SpError err = { 0 };
	SpLoaded loaded = { 0 };
	size_t failed;
	*ns = -1;
	int rc = sp_mono_enter (&err);
	if (rc == 0)
		rc = sp_store_load_newest (sp_store, NULL, NULL, NULL, NULL, &loaded, &err);
	if (rc == 0 && !loaded.n)
		rc = sp_error_set (&err, "the store holds no snapshot");
	/* The figure includes the checksum, which a restore computes once, as the store loads the chain. */
	for (size_t i = 0; rc == 0 && i < loaded.n; i++)
		loaded.parts [i].verified = false;
	if (rc == 0 && (rc = sp_mono_decode (loaded.parts, loaded.n, FALSE, NULL, &failed, &err)) == 0)
		*ns = sp_stats [SP_STAT_RESTORE_DECODE_NS];
	if (sp_store)
		sp_store_release_loaded (sp_store, &loaded);
	return sp_mono_leave (rc < 0 ? -1 : 0, &err);
}

/* SPDiagnostics.IdentitySlotOf: where instances of a type keep their identity slot (sp-identity.c), 0: none. */
static gint32
sp_icall_identity_slot (MonoReflectionType *type)
{
	MonoClass *klass = mono_class_from_mono_type_internal (type->type);
	mono_class_init_internal (klass);
	return m_class_is_valuetype (klass) ? 0 : (gint32)sp_mono_identity_slot_of (klass);
}

/* ---- driver hooks (sp-mono.h) ---------------------------------------------- */

gboolean
sp_mono_parse_option (const char *arg)
{
	SpError err = { 0 };
	if (sp_options_parse (&sp_options, arg, &err) == 0)
		return TRUE;
	fprintf (stderr, "spmono: %s\n", err.msg);
	return FALSE;
}

void
sp_mono_print_usage (FILE *out)
{
	sp_options_usage (out);
}

/*
 * SPersistence.dll is found beside the runtime, before any other copy: in
 * <bin>/../lib/spmono (installed, as the Debian package puts it:
 * /usr/bin/spmono, /usr/lib/spmono/SPersistence.dll) or <bin>/../lib (the
 * build tree).
 */
static MonoAssembly *
sp_mono_preload (MonoAssemblyLoadContext *alc, MonoAssemblyName *aname, char **paths, gboolean refonly, gpointer user_data, MonoError *error)
{
	(void)paths;
	(void)user_data;
	if (refonly || strcmp (aname->name, "SPersistence") != 0)
		return NULL;
	char exe [4096];
	ssize_t len = readlink ("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return NULL;
	exe [len] = '\0';
	char *bindir = g_path_get_dirname (exe);
	/* The installed place first: a stray /usr/lib/SPersistence.dll must not shadow the package's. */
	char *path = g_build_filename (bindir, "..", "lib", "spmono", "SPersistence.dll", (const char *)NULL);
	if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
		g_free (path);
		path = g_build_filename (bindir, "..", "lib", "SPersistence.dll", (const char *)NULL);
	}
	MonoAssembly *assembly = NULL;
	if (g_file_test (path, G_FILE_TEST_EXISTS)) {
		MonoAssemblyOpenRequest req;
		mono_assembly_request_prepare_open (&req, MONO_ASMCTX_DEFAULT, alc);
		MonoImageOpenStatus status;
		assembly = mono_assembly_request_open (path, &req, &status);
	}
	g_free (path);
	g_free (bindir);
	return assembly;
}

void
sp_mono_init (const char *program)
{
	SpError err = { 0 };
	if (sp_options_check (&sp_options, &err) < 0 || sp_cycle_check_runtime (&err) < 0) {
		fprintf (stderr, "spmono: %s\n", err.msg);
		exit (1);
	}
	sp_heap_apply ();
	sp_cpu_latency_hold ();
	mono_coop_mutex_init (&sp_lock);
	sp_trace_init ();
	sp_program = g_strdup (program);
	sp_roots = g_array_new (FALSE, TRUE, sizeof (SpRoot));
	sp_class_maps = g_hash_table_new (NULL, NULL);
	sp_class_map_failures = g_hash_table_new (NULL, NULL);
	sp_ser_init (&sp_ser);
	sp_buf_init (&sp_out);
	mono_install_assembly_preload_hook_v2 (sp_mono_preload, NULL, FALSE);
	if (sp_options.check)
		mono_install_assembly_load_hook_v2 (sp_mono_check_on_load, NULL);
	MonoProfilerHandle profiler = mono_profiler_create (NULL);
	mono_profiler_set_gc_event_callback (profiler, sp_mono_gc_event);
	mono_profiler_set_runtime_shutdown_begin_callback (profiler, sp_cycle_shutdown_begin);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_add_root", sp_icall_add_root);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_remove_root", sp_icall_remove_root);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_recv", sp_icall_recv);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_is_warm", sp_icall_is_warm);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_is_primary", sp_icall_is_primary);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_send", sp_icall_send);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_wait", sp_icall_wait);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_stats", sp_icall_stats);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_pause_histogram", sp_icall_pause_histogram);
	mono_add_internal_call_internal ("SPersistence.SPC::sp_take_upgrades", sp_icall_take_upgrades);
	mono_add_internal_call_internal ("SPersistence.SPDiagnostics::sp_bench_decode", sp_icall_bench_decode);
	mono_add_internal_call_internal ("SPersistence.SPDiagnostics::sp_identity_slot", sp_icall_identity_slot);
}
