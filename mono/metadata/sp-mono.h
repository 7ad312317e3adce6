/*
 * sp-mono.h: spmono's client side, what the rest of Mono calls.
 *
 * The persistence core (mono/spersist/) knows nothing of Mono; this client
 * builds its persistent class maps from custom attributes, gives it object
 * identity that survives a moving GC, allocates objects on restore, and
 * implements the internal calls behind SPersistence.SPC.
 */
#ifndef __MONO_METADATA_SP_MONO_H__
#define __MONO_METADATA_SP_MONO_H__

#include <stdio.h>

#include <glib.h>

#include <mono/metadata/object.h>

/* One "--sp-..." option from the command line or MONO_ENV_OPTIONS; FALSE (after a message on stderr) when bad. */
gboolean sp_mono_parse_option (const char *arg);
/*
 * Class layout (runtime-patches/0008): klass's instance size, given where its
 * fields end, grown by the 4-byte identity slot when klass introduces one
 * (sp-identity.c).
 */
int sp_mono_layout_identity_slot (MonoClass *klass, int fields_end, int instance_size, int min_align);
/* Assembly loading (runtime-patches/0009): must image be JIT-compiled, its AOT image left unloaded? */
gboolean sp_mono_refuses_aot_image (MonoImage *image);
/* The persistence part of `spmono --help`. */
void sp_mono_print_usage (FILE *out);
/* Once the JIT is up: register SPC's internal calls; `program` is the assembly being run. */
void sp_mono_init (const char *program);

/*
 * The store barrier (mono/mini/sp-jit.h emits it).  sp_barrier_active is
 * nonzero while a persistence cycle runs; JIT-compiled stores test it inline
 * and call sp_barrier_store (obj) before writing into obj.  It lives where
 * sp_barrier_flag points: in the lowest 2 GB of the address space when a page
 * could be mapped there (sp_barrier_flag_init), so that amd64 code can test
 * it with a 32-bit absolute address, one instruction.
 */
extern volatile gint32 *sp_barrier_flag;
#define sp_barrier_active (*sp_barrier_flag)
/* Before anything is JIT-compiled: place the flag (it never moves after). */
void sp_barrier_flag_init (void);
/* At JIT time: do the stores of `method` get the barrier (--sp-mode, --sp-barrier)? */
gboolean sp_mono_method_needs_barrier (MonoMethod *method);
/* At JIT time: do the arguments of a P/Invoke get the barrier, in whatever method calls it? */
gboolean sp_mono_native_call_needs_barrier (void);
/* Does every method get them (class libraries included: their AOT code must not be used)? */
gboolean sp_mono_barriers_everywhere (void);
/* Class-library code that stores into the state (List, Dictionary, Array, sorting, spans): guarded in every mode. */
gboolean sp_mono_is_state_writing_library_class (MonoClass *klass);
/*
 * At AOT load time (runtime-patches/0006): must `method` (or, when NULL, the
 * method `token` names in `image`) be JIT-compiled, because its stores need
 * the barrier and Debian's AOT code of the class libraries has none?
 */
gboolean sp_mono_refuses_aot_code (MonoImage *image, MonoMethod *method, guint32 token);
void sp_barrier_store (MonoObject *obj);
#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The amd64 thunk's check before it saves any register: is obj one of the
 * last few objects the barrier handled on this thread, in this cycle and GC
 * epoch?  (A loop storing into one array, or into a few objects in turn.)
 * It preserves every register but rax (its result) and the flags.
 */
__attribute__ ((no_caller_saved_registers, target ("general-regs-only")))
int sp_barrier_quick (uintptr_t obj);
#endif
/* The address barrier's slow path (mini/sp-jit.h): a store at addr, or of len bytes at dest ((gsize)-1: to the end of its object). */
void sp_barrier_store_addr (gpointer addr);
void sp_barrier_store_range (gpointer dest, gsize len);

/*
 * Native code in flight (metadata/sp-unseen.c, runtime-patches/0007): a
 * P/Invoke's wrapper reports each argument native code may write through
 * (sp_native_arg_enter, JIT icall) just before it enters GC-safe mode, and
 * forgets them (sp_native_args_leave (count)) just after; a cycle starting
 * meanwhile logs them as stores no barrier saw.  The emitters add those calls
 * to a wrapper being built, in incremental mode only, and return the count.
 */
void sp_native_arg_enter (gpointer addr);
void sp_native_args_leave (gint32 count);
struct _MonoMethodBuilder;
struct _MonoMethodSignature;
int sp_mono_emit_native_args_enter (struct _MonoMethodBuilder *mb, struct _MonoMethodSignature *sig, int param_shift);
void sp_mono_emit_native_args_leave (struct _MonoMethodBuilder *mb, int count);

/*
 * The runtime's own writes into managed memory, which the JIT does not see
 * (runtime-patches/0005: Array.Copy's and Array.Clear's native parts,
 * Array.SetValue, Buffer.BlockCopy, the memmoves under spans): the barrier
 * from the native side, just before the write, with nothing between that
 * can reach a safepoint.  The JIT's barrier before the call of such a method
 * is not enough on its own: the managed code between the call and the write
 * has safepoints, and a cycle may start at one.  Nothing unless a cycle runs.
 */
static inline void
sp_barrier_native_object (MonoObject *obj)
{
	if (sp_barrier_flag && sp_barrier_active)
		sp_barrier_store (obj);
}

static inline void
sp_barrier_native_range (gpointer dest, gsize len)
{
	if (sp_barrier_flag && sp_barrier_active)
		sp_barrier_store_range (dest, len);
}

#endif
