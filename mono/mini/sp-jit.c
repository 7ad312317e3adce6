/* sp-jit.c: see sp-jit.h.  The policy (which methods) is in metadata/sp-mono.c. */
#include <config.h>

#include "sp-jit.h"

#include "ir-emit.h"
#include "jit-icalls.h"
#include "mini-runtime.h"

#include <string.h>

#include <mono/metadata/sp-mono.h>

void
sp_jit_before_init (void)
{
	/*
	 * Debian ships AOT code for mscorlib, compiled without barriers: when
	 * every method must be guarded, class libraries included, it is not used.
	 */
	if (sp_mono_barriers_everywhere ())
		mono_aot_mode = MONO_AOT_MODE_NONE;
}

void
sp_jit_emit_store_barrier (MonoCompile *cfg, MonoInst *obj)
{
	/* cfg->current_method: the method being converted, the inlined one when inlining. */
	MonoMethod *method = cfg->current_method ? cfg->current_method : cfg->method;
	if (obj->type != STACK_OBJ || !sp_mono_method_needs_barrier (method))
		return;
	MonoInst *flag_addr;
	MonoBasicBlock *done_bb;
	int flag_reg = alloc_ireg (cfg);
	EMIT_NEW_PCONST (cfg, flag_addr, (gpointer)&sp_barrier_active);
	MONO_EMIT_NEW_LOAD_MEMBASE_OP (cfg, OP_LOADI4_MEMBASE, flag_reg, flag_addr->dreg, 0);
	NEW_BBLOCK (cfg, done_bb);
	MONO_EMIT_NEW_BIALU_IMM (cfg, OP_COMPARE_IMM, -1, flag_reg, 0);
	MONO_EMIT_NEW_BRANCH_BLOCK (cfg, OP_IBEQ, done_bb);
	mono_emit_jit_icall (cfg, sp_barrier_store, &obj);
	MONO_START_BB (cfg, done_bb);
}

/* Which arguments of a System.Array or System.Buffer method it writes into (bits), 0 for none. */
static guint
sp_jit_written_array_args (MonoMethod *cmethod, MonoMethodSignature *fsig)
{
	MonoClass *k = cmethod->klass;
	if (strcmp (m_class_get_name_space (k), "System") != 0)
		return 0;
	const char *cls = m_class_get_name (k), *m = cmethod->name;
	if (strcmp (cls, "Buffer") == 0)
		return strcmp (m, "BlockCopy") == 0 ? 1u << 2 : 0;      /* (src, srcOffset, dst, dstOffset, count) */
	if (strcmp (cls, "Array") != 0 || fsig->hasthis)
		return 0;
	if (strcmp (m, "Copy") == 0 || strcmp (m, "ConstrainedCopy") == 0)
		return fsig->param_count == 5 ? 1u << 2 : 1u << 1;       /* (src, [srcIndex,] dst, ...) */
	if (strcmp (m, "Clear") == 0 || strcmp (m, "Reverse") == 0 || strcmp (m, "Fill") == 0)
		return 1u;
	if (strcmp (m, "Sort") == 0)
		return 3u;                                               /* (keys [, items], ...) */
	return 0;
}

void
sp_jit_emit_call_barrier (MonoCompile *cfg, MonoMethod *cmethod, MonoMethodSignature *fsig, MonoInst **args)
{
	if (!cmethod || !fsig)
		return;
	guint written = sp_jit_written_array_args (cmethod, fsig);
	for (int i = 0; written && i < fsig->param_count && i < 3; i++)
		if (written & (1u << i))
			sp_jit_emit_store_barrier (cfg, args [i]);   /* only arguments that are objects (sp_jit_emit_store_barrier checks) */
}
