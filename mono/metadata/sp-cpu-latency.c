/*
 * sp-cpu-latency.c: --sp-cpu-latency, the CPUs' wake-up latency limit held
 * while the program runs (part of the client, see sp-mono-state.h).
 *
 * Why.  The SP task sleeps between increments (2.5 ms of a 3 ms period by
 * default), and an idle CPU goes to an idle state; leaving a deep one takes
 * time, and on a VM a halted vCPU comes back to a host that gave its core to
 * others, so the whole increment that follows runs slower, not only its
 * first microseconds (docs/INCREMENTAL.md, "Extra work of the incremental
 * cycle": after a 2.5 ms sleep an increment wrote 8-10 objects a
 * microsecond, after 0.2 ms 11-12).  Real-time set-ups hold a CPU latency
 * limit for that (cyclictest holds 0 by default): Linux's PM QoS keeps every
 * CPU out of idle states slower to leave than the limit while a request for
 * it is open (Documentation/power/pm_qos_interface.rst): write the limit, a
 * 32-bit integer of microseconds, to /dev/cpu_dma_latency and keep the file
 * open.  The request ends when the file is closed, which the kernel does
 * when the process exits, however it exits: nothing is left behind.
 *
 * Where the request is refused (no write access to the device: it takes
 * root; no such device), the program runs without it, with a warning, as it
 * does when --sp-priority is refused: persistence loses nothing, only the
 * timing the option was asked for.
 */
#include <errno.h>
#include <fcntl.h>

/* The request's file, open for the process's life (-1: none held). */
static int sp_cpu_latency_fd = -1;

/* Hold --sp-cpu-latency's limit, if given, until the process exits (above); once: a second call keeps the first request. */
static void
sp_cpu_latency_hold (void)
{
	if (sp_options.cpu_latency_us < 0 || sp_cpu_latency_fd >= 0)
		return;
	const char *device = sp_mono_system_path ("SPMONO_TEST_CPU_LATENCY_DEVICE", "/dev/cpu_dma_latency");
	gint32 limit = sp_options.cpu_latency_us;
	int fd = open (device, O_WRONLY | O_CLOEXEC);
	ssize_t wrote = fd >= 0 ? write (fd, &limit, sizeof limit) : -1;
	if (wrote == (ssize_t)sizeof limit) {
		sp_cpu_latency_fd = fd;
		if (sp_options.verbose)
			fprintf (stderr, "spmono: CPUs held to a wake-up latency of %d us (%s)\n", limit, device);
		return;
	}
	int error = wrote >= 0 ? EIO : errno;   /* a short write sets no errno */
	if (fd >= 0)
		close (fd);
	fprintf (stderr, "spmono: warning: --sp-cpu-latency=%d: cannot hold the limit through %s (%s); the CPUs may enter "
		 "idle states slower to leave%s\n", limit, device, g_strerror (error),
		 error == EACCES || error == EPERM ? " (it takes write access to the device: run as root)" : "");
}
