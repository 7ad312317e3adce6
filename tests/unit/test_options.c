/* test_options.c: --sp-* parsing and the store location's precedence. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* setenv */
#endif
#include "unit.h"

#include "sp-options.h"

static int
setup (void **state)
{
	(void)state;
	unsetenv ("SPMONO_STORE");
	return 0;
}

static void
test_defaults (void **state)
{
	(void)state;
	SpOptions o;
	sp_options_init (&o);
	assert_null (o.store);
	assert_int_equal (o.keep, SP_DEFAULT_KEEP);
	assert_false (o.verbose);
	assert_false (o.stats);
	assert_int_equal (o.mode, SP_MODE_STW);
	assert_int_equal (o.barrier, SP_BARRIER_MARKING);
	assert_int_equal (o.pause_us, SP_DEFAULT_PAUSE_US);
	assert_int_equal (o.period_us, SP_DEFAULT_PERIOD_US);
	assert_int_equal (o.priority, 0);
	assert_false (o.busy_wait);
	SpError err = { 0 };
	assert_ok (sp_options_check (&o, &err), &err);
	sp_options_free (&o);
}

/* Each option of the schedulable cycle: its values, and its refusals naming it. */
/* Each of `bad` is refused, with a message naming its option. */
static void
assert_all_refused (SpOptions *o, const char *const *bad, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		SpError err = { 0 };
		if (sp_options_parse (o, bad [i], &err) != -1) {
			print_error ("%s was accepted\n", bad [i]);
			fail ();
		}
		char name [32];
		snprintf (name, sizeof name, "%.*s", (int)strcspn (bad [i], "="), bad [i]);
		assert_contains (err.msg, name);
	}
}

static void
test_cycle_options (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_ok (sp_options_parse (&o, "--sp-mode=incremental", &err), &err);
	assert_int_equal (o.mode, SP_MODE_INCREMENTAL);
	assert_ok (sp_options_parse (&o, "--sp-mode=stw", &err), &err);
	assert_int_equal (o.mode, SP_MODE_STW);
	assert_ok (sp_options_parse (&o, "--sp-barrier=annotating", &err), &err);
	assert_int_equal (o.barrier, SP_BARRIER_ANNOTATING);
	assert_ok (sp_options_parse (&o, "--sp-barrier=marking-v2", &err), &err);
	assert_int_equal (o.barrier, SP_BARRIER_MARKING_V2);
	assert_ok (sp_options_parse (&o, "--sp-barrier=marking", &err), &err);
	assert_int_equal (o.barrier, SP_BARRIER_MARKING);
	assert_false (o.mark_first);
	assert_ok (sp_options_parse (&o, "--sp-passes=2", &err), &err);
	assert_true (o.mark_first);
	assert_ok (sp_options_parse (&o, "--sp-passes=1", &err), &err);
	assert_false (o.mark_first);
	assert_ok (sp_options_parse (&o, "--sp-passes=2", &err), &err);
	assert_ok (sp_options_parse (&o, "--sp-pause=50", &err), &err);
	assert_int_equal (o.pause_us, 50);
	assert_ok (sp_options_parse (&o, "--sp-period=1000", &err), &err);
	assert_int_equal (o.period_us, 1000);
	assert_ok (sp_options_parse (&o, "--sp-priority=80", &err), &err);
	assert_int_equal (o.priority, 80);
	assert_ok (sp_options_parse (&o, "--sp-stats", &err), &err);
	assert_true (o.stats);
	assert_ok (sp_options_parse (&o, "--sp-busy=wait", &err), &err);
	assert_true (o.busy_wait);
	assert_ok (sp_options_parse (&o, "--sp-busy=skip", &err), &err);
	assert_false (o.busy_wait);
	assert_ok (sp_options_parse (&o, "--sp-busy=wait", &err), &err);
	assert_string_equal (sp_mode_name (o.mode), "stw");
	assert_string_equal (sp_barrier_name (SP_BARRIER_MARKING_V2), "marking-v2");
	const char *const bad [] = {
		"--sp-mode", "--sp-mode=", "--sp-mode=STW", "--sp-mode=concurrent",
		"--sp-barrier=mark", "--sp-barrier=", "--sp-barrier",
		"--sp-pause=9", "--sp-pause=0", "--sp-pause=-5", "--sp-pause=1000001", "--sp-pause=5ms", "--sp-pause",
		"--sp-period=99", "--sp-period=10000001", "--sp-period=x",
		"--sp-priority=100", "--sp-priority=-1", "--sp-priority=high",
		"--sp-stats=1", "--sp-busy", "--sp-busy=", "--sp-busy=block", "--sp-busy=Wait",
		"--sp-passes", "--sp-passes=", "--sp-passes=0", "--sp-passes=3", "--sp-passes=two", "--sp-passes=2x",
	};
	assert_all_refused (&o, bad, sizeof bad / sizeof bad [0]);
	/* Refusals changed nothing. */
	assert_int_equal (o.pause_us, 50);
	assert_int_equal (o.period_us, 1000);
	assert_int_equal (o.priority, 80);
	assert_int_equal (o.barrier, SP_BARRIER_MARKING);
	assert_true (o.busy_wait);
	assert_true (o.mark_first);
	sp_options_free (&o);
}

/* The chunk buffers' size, in bytes or K/M/G, within bounds; the writer's policy. */
static void
test_buffer_and_writer_options (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_int_equal (o.buffer, 1u << 20);
	assert_int_equal (o.writer, SP_WRITER_BUDGET);
	assert_ok (sp_options_parse (&o, "--sp-buffer=65536", &err), &err);
	assert_int_equal (o.buffer, 65536);
	assert_ok (sp_options_parse (&o, "--sp-buffer=4K", &err), &err);
	assert_int_equal (o.buffer, 4096);
	assert_ok (sp_options_parse (&o, "--sp-buffer=2MiB", &err), &err);
	assert_int_equal (o.buffer, 2u << 20);
	assert_ok (sp_options_parse (&o, "--sp-buffer=1g", &err), &err);
	assert_int_equal (o.buffer, 1u << 30);
	assert_ok (sp_options_parse (&o, "--sp-writer=background", &err), &err);
	assert_int_equal (o.writer, SP_WRITER_BACKGROUND);
	assert_string_equal (sp_writer_name (o.writer), "background");
	const char *const bad [] = {
		"--sp-buffer", "--sp-buffer=", "--sp-buffer=4095", "--sp-buffer=0", "--sp-buffer=-1M", "--sp-buffer=2G",
		"--sp-buffer=1T", "--sp-buffer=1Mx", "--sp-buffer=M", "--sp-buffer=99999999999999999999",
		"--sp-writer", "--sp-writer=", "--sp-writer=idle", "--sp-writer=Budget",
	};
	assert_all_refused (&o, bad, sizeof bad / sizeof bad [0]);
	assert_int_equal (o.buffer, 1u << 30);
	assert_int_equal (o.writer, SP_WRITER_BACKGROUND);
	sp_options_free (&o);
}

/* Deltas: off by default; on/off, a ratio within bounds; not yet with incremental mode (said so). */
static void
test_delta_options (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_false (o.delta);
	assert_int_equal (o.delta_ratio, SP_DEFAULT_DELTA_RATIO);
	assert_ok (sp_options_parse (&o, "--sp-delta=on", &err), &err);
	assert_true (o.delta);
	assert_ok (sp_options_parse (&o, "--sp-delta-ratio=200", &err), &err);
	assert_int_equal (o.delta_ratio, 200);
	assert_ok (sp_options_check (&o, &err), &err);
	const char *const bad [] = {
		"--sp-delta", "--sp-delta=", "--sp-delta=yes", "--sp-delta=ON", "--sp-delta-ratio", "--sp-delta-ratio=0",
		"--sp-delta-ratio=10001", "--sp-delta-ratio=-5", "--sp-delta-ratio=50%", "--sp-delta-ratio=0.5",
	};
	assert_all_refused (&o, bad, sizeof bad / sizeof bad [0]);
	assert_true (o.delta);
	assert_int_equal (o.delta_ratio, 200);
	/* Both modes write deltas. */
	assert_ok (sp_options_parse (&o, "--sp-mode=incremental", &err), &err);
	assert_ok (sp_options_check (&o, &err), &err);
	assert_true (o.delta);
	assert_ok (sp_options_parse (&o, "--sp-delta=off", &err), &err);
	assert_ok (sp_options_check (&o, &err), &err);
	assert_false (o.delta);
	sp_options_free (&o);
}

/* The heap: returned by default (upstream's behaviour); keep, huge (kept too) or return; anything else refused, the last value kept. */
static void
test_heap_option (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_false (o.heap_kept);
	assert_false (o.heap_huge);
	assert_ok (sp_options_parse (&o, "--sp-heap=keep", &err), &err);
	assert_true (o.heap_kept);
	assert_false (o.heap_huge);
	assert_ok (sp_options_parse (&o, "--sp-heap=huge", &err), &err);
	assert_true (o.heap_kept);   /* a huge heap is kept: unmapping a block would split its page */
	assert_true (o.heap_huge);
	const char *const bad [] = { "--sp-heap", "--sp-heap=", "--sp-heap=Keep", "--sp-heap=yes", "--sp-heap=keep,return",
				     "--sp-heap=HUGE", "--sp-heap=huge2" };
	assert_all_refused (&o, bad, sizeof bad / sizeof bad [0]);
	assert_true (o.heap_huge);
	assert_ok (sp_options_parse (&o, "--sp-heap=keep", &err), &err);
	assert_true (o.heap_kept);
	assert_false (o.heap_huge);
	assert_ok (sp_options_parse (&o, "--sp-heap=return", &err), &err);
	assert_false (o.heap_kept);
	assert_false (o.heap_huge);
	sp_options_free (&o);
}

/* The CPU latency limit: none by default; 0 to a second in microseconds; anything else refused, the last value kept. */
static void
test_cpu_latency_option (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_int_equal (o.cpu_latency_us, -1);
	assert_ok (sp_options_parse (&o, "--sp-cpu-latency=0", &err), &err);
	assert_int_equal (o.cpu_latency_us, 0);
	assert_ok (sp_options_parse (&o, "--sp-cpu-latency=1000000", &err), &err);
	assert_int_equal (o.cpu_latency_us, 1000000);
	assert_ok (sp_options_parse (&o, "--sp-cpu-latency=20", &err), &err);
	const char *const bad [] = { "--sp-cpu-latency", "--sp-cpu-latency=", "--sp-cpu-latency=-1", "--sp-cpu-latency=1000001",
				     "--sp-cpu-latency=20us", "--sp-cpu-latency=abc", "--sp-cpu-latency=4294967296" };
	assert_all_refused (&o, bad, sizeof bad / sizeof bad [0]);
	assert_int_equal (o.cpu_latency_us, 20);
	assert_int_equal (sp_options_parse (&o, "--sp-cpu-latency=-5", &err), -1);
	assert_contains (err.msg, "--sp-cpu-latency takes the longest wake-up latency");
	assert_contains (err.msg, "'-5'");
	sp_options_free (&o);
}

/* An increment longer than its period cannot be scheduled: refused, naming both. */
static void
test_pause_must_fit_period (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_ok (sp_options_parse (&o, "--sp-pause=2000", &err), &err);
	assert_ok (sp_options_parse (&o, "--sp-period=1000", &err), &err);
	assert_fails (sp_options_check (&o, &err), &err);
	assert_contains (err.msg, "--sp-pause=2000");
	assert_contains (err.msg, "--sp-period=1000");
	assert_ok (sp_options_parse (&o, "--sp-period=2000", &err), &err);
	assert_ok (sp_options_check (&o, &err), &err);
	sp_options_free (&o);
}

static void
test_store_option (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_ok (sp_options_parse (&o, "--sp-store=/var/lib/app", &err), &err);
	assert_string_equal (o.store, "/var/lib/app");
	/* The last one wins; '=' inside the value is kept. */
	assert_ok (sp_options_parse (&o, "--sp-store=file:/data/a=b", &err), &err);
	assert_string_equal (o.store, "file:/data/a=b");
	/* Empty, or no value at all: refused, naming the option; the previous value stays. */
	assert_fails (sp_options_parse (&o, "--sp-store=", &err), &err);
	assert_contains (err.msg, "--sp-store");
	assert_fails (sp_options_parse (&o, "--sp-store", &err), &err);
	assert_contains (err.msg, "--sp-store");
	assert_string_equal (o.store, "file:/data/a=b");
	sp_options_free (&o);
	assert_null (o.store);
}

static void
test_keep_option (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_ok (sp_options_parse (&o, "--sp-keep=5", &err), &err);
	assert_int_equal (o.keep, 5);
	assert_ok (sp_options_parse (&o, "--sp-keep=1", &err), &err);
	assert_int_equal (o.keep, 1);
	assert_ok (sp_options_parse (&o, "--sp-keep=1000000", &err), &err);
	assert_int_equal (o.keep, 1000000);
	const char *const bad [] = {
		"--sp-keep=0", "--sp-keep=-1", "--sp-keep=abc", "--sp-keep=", "--sp-keep",
		"--sp-keep=3x", "--sp-keep=1000001", "--sp-keep=4294967297", "--sp-keep=18446744073709551617",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
		o.keep = 7;
		err.msg [0] = '\0';
		if (sp_options_parse (&o, bad [i], &err) != -1) {
			print_error ("%s accepted (keep = %u)\n", bad [i], o.keep);
			fail ();
		}
		assert_contains (err.msg, "--sp-keep");
		/* The message quotes what it refused. */
		const char *value = strchr (bad [i], '=');
		assert_contains (err.msg, value ? value + 1 : "");
		assert_int_equal (o.keep, 7);
	}
	sp_options_free (&o);
}

static void
test_verbose_option (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	assert_ok (sp_options_parse (&o, "--sp-verbose", &err), &err);
	assert_true (o.verbose);
	sp_options_init (&o);
	assert_fails (sp_options_parse (&o, "--sp-verbose=yes", &err), &err);
	assert_contains (err.msg, "--sp-verbose");
	assert_false (o.verbose);
	assert_false (o.check);
	assert_ok (sp_options_parse (&o, "--sp-check", &err), &err);
	assert_true (o.check);
	assert_fails (sp_options_parse (&o, "--sp-check=now", &err), &err);
	assert_contains (err.msg, "--sp-check takes no value");
	sp_options_free (&o);
}

static void
test_unknown_options (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	const char *const bad [] = { "--sp-foo", "--sp-foo=1", "--sp-stores=x", "--sp-kee=2", "--sp-", "--sp-verbosex" };
	for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
		err.msg [0] = '\0';
		assert_int_equal (sp_options_parse (&o, bad [i], &err), -1);
		/* Named without its value. */
		char name [32];
		snprintf (name, sizeof name, "%.*s", (int)strcspn (bad [i], "="), bad [i]);
		assert_contains (err.msg, name);
	}
	/* Nothing changed. */
	assert_null (o.store);
	assert_int_equal (o.keep, SP_DEFAULT_KEEP);
	assert_false (o.verbose);
	sp_options_free (&o);
}

static void
check_location (const SpOptions *o, const char *program, const char *want)
{
	char *loc = sp_options_store_location (o, program);
	assert_non_null (loc);
	assert_string_equal (loc, want);
	free (loc);
}

static void
test_store_location_precedence (void **state)
{
	(void)state;
	SpOptions o;
	SpError err = { 0 };
	sp_options_init (&o);
	/* Default: next to the program, extension replaced. */
	check_location (&o, "dir/App.exe", "dir/App.spstore");
	check_location (&o, "/opt/plant/Controller.exe", "/opt/plant/Controller.spstore");
	check_location (&o, "dir/App", "dir/App.spstore");
	check_location (&o, "App.exe", "App.spstore");
	/* A dot in a directory name is not an extension; nor is a leading dot. */
	check_location (&o, "my.dir/App", "my.dir/App.spstore");
	check_location (&o, "dir/.hidden", "dir/.hidden.spstore");
	check_location (&o, "dir/App.v2.exe", "dir/App.v2.spstore");
	/* SPMONO_STORE beats the default (an empty one does not count). */
	assert_int_equal (setenv ("SPMONO_STORE", "", 1), 0);
	check_location (&o, "dir/App.exe", "dir/App.spstore");
	assert_int_equal (setenv ("SPMONO_STORE", "/env/store", 1), 0);
	check_location (&o, "dir/App.exe", "/env/store");
	/* --sp-store beats SPMONO_STORE. */
	assert_ok (sp_options_parse (&o, "--sp-store=/opt/explicit", &err), &err);
	check_location (&o, "dir/App.exe", "/opt/explicit");
	unsetenv ("SPMONO_STORE");
	check_location (&o, "dir/App.exe", "/opt/explicit");
	sp_options_free (&o);
	/* No program name at all still gives a location. */
	sp_options_init (&o);
	char *loc = sp_options_store_location (&o, NULL);
	assert_non_null (loc);
	assert_true (strlen (loc) > strlen (".spstore"));
	free (loc);
	sp_options_free (&o);
}

static void
test_usage_lists_every_option (void **state)
{
	(void)state;
	char *text = NULL;
	size_t size = 0;
	FILE *fp = open_memstream (&text, &size);
	assert_non_null (fp);
	sp_options_usage (fp);
	fclose (fp);
	assert_contains (text, "--sp-store");
	assert_contains (text, "--sp-keep");
	assert_contains (text, "--sp-verbose");
	assert_contains (text, "--sp-mode");
	assert_contains (text, "--sp-pause");
	assert_contains (text, "--sp-period");
	assert_contains (text, "--sp-priority");
	assert_contains (text, "--sp-barrier");
	assert_contains (text, "--sp-busy");
	assert_contains (text, "--sp-stats");
	assert_contains (text, "--sp-buffer");
	assert_contains (text, "--sp-writer");
	assert_contains (text, "--sp-delta=");
	assert_contains (text, "--sp-heap=");
	assert_contains (text, "--sp-cpu-latency=");
	assert_contains (text, "--sp-delta-ratio");
	assert_contains (text, "SPMONO_STORE");
	free (text);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_setup (test_defaults, setup),
		cmocka_unit_test_setup (test_cycle_options, setup),
		cmocka_unit_test_setup (test_buffer_and_writer_options, setup),
		cmocka_unit_test_setup (test_delta_options, setup),
		cmocka_unit_test_setup (test_heap_option, setup),
		cmocka_unit_test_setup (test_cpu_latency_option, setup),
		cmocka_unit_test_setup (test_pause_must_fit_period, setup),
		cmocka_unit_test_setup (test_store_option, setup),
		cmocka_unit_test_setup (test_keep_option, setup),
		cmocka_unit_test_setup (test_verbose_option, setup),
		cmocka_unit_test_setup (test_unknown_options, setup),
		cmocka_unit_test_setup (test_store_location_precedence, setup),
		cmocka_unit_test_setup (test_usage_lists_every_option, setup),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
