/*
 * spfaults.c: storage faults for the runtime tests, injected with LD_PRELOAD.
 *
 *   LD_PRELOAD=libspfaults.so SPFAULTS_CONTROL=FILE spmono ...
 *
 * Before each write, fsync or msync of a snapshot being committed (a file
 * whose name ends in ".spm.tmp", or any msync: the pmem store), the first
 * word of FILE says what happens:
 *
 *   enospc   write fails with ENOSPC
 *   eio      write fails with EIO
 *   short    write writes half of what it was given, then fails with ENOSPC
 *   fsync    fsync (and msync) fail with EIO
 *   slow     fsync (and msync) take 300 ms, then go through (a slow disk)
 *   slow-eio fsync (and msync) take 300 ms, then fail with EIO (a disk that dies
 *            while a commit waits for it)
 *   fold-enospc  a write to a folded snapshot being written (".spm.fold", the
 *            fold task's) fails with ENOSPC; commits go through
 *   (other, or no file)   nothing: the call goes through
 *
 * The program under test rewrites FILE to turn faults on and off.  Only these
 * calls are affected; the file is read at each of them (tests only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void
fault_mode (char *mode, size_t cap)
{
	mode [0] = '\0';
	const char *control = getenv ("SPFAULTS_CONTROL");
	if (!control)
		return;
	int fd = open (control, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read (fd, mode, cap - 1);
	close (fd);
	mode [n > 0 ? n : 0] = '\0';
	mode [strcspn (mode, " \n")] = '\0';
}

/* Does fd's file name end in `suffix`? */
static int
fd_name_ends (int fd, const char *suffix)
{
	char link [64], path [4096];
	size_t len = strlen (suffix);
	snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink (link, path, sizeof path - 1);
	if (n <= (ssize_t)len)
		return 0;
	path [n] = '\0';
	return strcmp (path + n - len, suffix) == 0;
}

/* Is fd a snapshot being committed by the file store? */
static int
is_commit_file (int fd)
{
	return fd_name_ends (fd, ".spm.tmp");
}

ssize_t
write (int fd, const void *buf, size_t count)
{
	static ssize_t (*real) (int, const void *, size_t);
	if (!real)
		real = (ssize_t (*) (int, const void *, size_t))dlsym (RTLD_NEXT, "write");
	char mode [32];
	if (count > 0 && fd_name_ends (fd, ".spm.fold")) {
		fault_mode (mode, sizeof mode);
		if (strcmp (mode, "fold-enospc") == 0) {
			errno = ENOSPC;
			return -1;
		}
	}
	if (count > 0 && is_commit_file (fd)) {
		fault_mode (mode, sizeof mode);
		if (strcmp (mode, "enospc") == 0 || strcmp (mode, "eio") == 0) {
			errno = mode [1] == 'n' ? ENOSPC : EIO;
			return -1;
		}
		if (strcmp (mode, "short") == 0) {
			/* Half now; the rest then meets a full disk. */
			static int half_written;
			if (!half_written && count > 1) {
				half_written = 1;
				return real (fd, buf, count / 2);
			}
			half_written = 0;
			errno = ENOSPC;
			return -1;
		}
	}
	return real (fd, buf, count);
}

int
fsync (int fd)
{
	static int (*real) (int);
	if (!real)
		real = (int (*) (int))dlsym (RTLD_NEXT, "fsync");
	char mode [32];
	if (is_commit_file (fd)) {
		fault_mode (mode, sizeof mode);
		if (strncmp (mode, "slow", 4) == 0)
			usleep (300000);
		if (strcmp (mode, "fsync") == 0 || strcmp (mode, "slow-eio") == 0) {
			errno = EIO;
			return -1;
		}
	}
	return real (fd);
}

int
msync (void *addr, size_t length, int flags)
{
	static int (*real) (void *, size_t, int);
	if (!real)
		real = (int (*) (void *, size_t, int))dlsym (RTLD_NEXT, "msync");
	char mode [32];
	fault_mode (mode, sizeof mode);
	if (strncmp (mode, "slow", 4) == 0)
		usleep (300000);
	if (strcmp (mode, "fsync") == 0 || strcmp (mode, "slow-eio") == 0) {
		errno = EIO;
		return -1;
	}
	return real (addr, length, flags);
}
