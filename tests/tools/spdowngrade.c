/*
 * spdowngrade FILE: rewrites a snapshot file as an spmono before the class
 * index (docs/FORMAT.md, "The class index") wrote it, so that the runtime
 * tests restore old snapshots as well as new ones.  The file must be a
 * valid snapshot; one without an index is left as it is (exit status 0),
 * anything else is refused untouched (status 1).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "class-index.h"
#include "sp-error.h"
#include "sp-snapshot.h"

static int
write_whole (const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen (path, "wb");
	bool written = f && fwrite (data, 1, size, f) == size;
	if ((f && fclose (f) != 0) || !written) {
		perror (path);
		return 1;
	}
	return 0;
}

static int
downgrade (const char *path)
{
	FILE *f = fopen (path, "rb");
	if (!f) {
		perror (path);
		return 1;
	}
	uint8_t *data = NULL;
	size_t size = 0, cap = 0, got;
	do {
		if (size == cap && !(data = realloc (data, cap = cap ? 2 * cap : 1 << 16))) {
			fclose (f);
			fprintf (stderr, "%s: out of memory\n", path);
			return 1;
		}
		got = fread (data + size, 1, cap - size, f);
		size += got;
	} while (got > 0);
	fclose (f);
	SpError err = { 0 };
	if (sp_snapshot_check (data, size, NULL, NULL, &err) < 0) {
		fprintf (stderr, "%s: %s\n", path, err.msg);
		free (data);
		return 1;
	}
	int rc = class_index_strip (data, &size) ? write_whole (path, data, size) : 0;
	free (data);
	return rc;
}

int
main (int argc, char **argv)
{
	if (argc != 2) {
		fprintf (stderr, "usage: spdowngrade FILE\n");
		return 2;
	}
	return downgrade (argv [1]);
}
