/*
 * sp-heap.c: --sp-heap, what the heap does with its memory: returned
 * after collections (upstream's behaviour), kept (runtime patch 0015), or
 * kept with the old generation in huge pages (runtime patch 0016) (part of
 * the client, see sp-mono-state.h).
 *
 * Why huge pages.  A snapshot walks a state in the order of its graph, which
 * is not the order of memory once a program has allocated, collected and
 * grown it: with 4 KB pages every object it meets is likely a TLB miss, and
 * the page walk's entries (8 bytes for every 4 KB: 2 MB of them for a 1 GB
 * heap) compete with the objects for the caches.  An incremental cycle pays
 * that more than stop-the-world does: the SP task sleeps between increments,
 * other work (on a VM, other tenants) takes the caches meanwhile, and each
 * increment starts by missing for the page walk as well as for the object.
 * With the old generation in 2 MB pages, one TLB entry covers 2 MB and the
 * page tables of a gigabyte fit in a few cache lines.
 *
 * The kernel gives a transparent huge page to a mapping that asks for one
 * (MADV_HUGEPAGE) when /sys/kernel/mm/transparent_hugepage/enabled says
 * "always" or "madvise", and when it has a free 2 MB block (else small pages
 * back the section, as before).  With "never", or a kernel without them, the
 * program runs on with small pages and a warning naming the file and what it
 * says, as a refused --sp-cpu-latency does: persistence loses nothing.
 */

#include <errno.h>

/* Warn when the kernel will not give the huge pages --sp-heap=huge asks for. */
static void
sp_heap_check_thp (void)
{
	const char *file = sp_mono_system_path ("SPMONO_TEST_THP_SETTING", "/sys/kernel/mm/transparent_hugepage/enabled");
	char setting [256] = "";
	FILE *f = fopen (file, "r");
	if (!f || !fgets (setting, sizeof setting, f)) {
		int error = f ? EIO : errno;
		fprintf (stderr, "spmono: warning: --sp-heap=huge: cannot read %s (%s): this kernel may have no transparent "
			 "huge pages; the heap may stay in small pages\n", file, g_strerror (error));
		if (f)
			fclose (f);
		return;
	}
	fclose (f);
	g_strstrip (setting);
	if (strstr (setting, "[never]"))
		fprintf (stderr, "spmono: warning: --sp-heap=huge: transparent huge pages are off (%s: %s); the heap stays in "
			 "small pages (as root: echo madvise > %s)\n", file, setting, file);
	else if (sp_options.verbose)
		fprintf (stderr, "spmono: the old generation in 2 MB sections, huge pages asked for (%s: %s)\n", file, setting);
}

/* --sp-heap's choice, given to SGen before the program allocates (sp_mono_init). */
static void
sp_heap_apply (void)
{
	sgen_memgov_keep_heap (sp_options.heap_kept);   /* runtime patch 0015 */
	sgen_memgov_huge_heap (sp_options.heap_huge);   /* runtime patch 0016 */
	if (sp_options.heap_huge)
		sp_heap_check_thp ();
}
