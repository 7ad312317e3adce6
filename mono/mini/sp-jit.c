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

#ifdef TARGET_AMD64
#include <mono/arch/amd64/amd64-codegen.h>

/*
 * The slow path's thunks: sp_barrier_thunk_REG passes register REG to
 * sp_barrier_store and preserves every other register, flags aside: the
 * caller-saved general registers and xmm0-15 are saved around the call (the
 * callee-saved ones sp_barrier_store preserves itself).  The stack is
 * realigned, so the call site's alignment does not matter.  The saved
 * registers are on the stack while sp_barrier_store runs, where SGen's
 * conservative scan of the thread's stack sees (and pins) any object they
 * refer to, should it wait for sp_lock in GC-safe mode or allocate.
 */
#define SP_THUNK(reg) \
	".globl sp_barrier_thunk_" #reg "\n.hidden sp_barrier_thunk_" #reg "\n" \
	".type sp_barrier_thunk_" #reg ", @function\n" \
	"sp_barrier_thunk_" #reg ":\n" \
	"	push %rdi\n" \
	"	mov %" #reg ", %rdi\n" \
	"	jmp sp_barrier_thunk_common\n"

__asm__ (
	".text\n"
	".p2align 4\n"
	"sp_barrier_thunk_common:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	and $-16, %rsp\n"
	"	push %rax\n	push %rcx\n	push %rdx\n	push %rsi\n"
	"	push %r8\n	push %r9\n	push %r10\n	push %r11\n"
	"	sub $256, %rsp\n"
	"	movdqu %xmm0, 0(%rsp)\n	movdqu %xmm1, 16(%rsp)\n	movdqu %xmm2, 32(%rsp)\n	movdqu %xmm3, 48(%rsp)\n"
	"	movdqu %xmm4, 64(%rsp)\n	movdqu %xmm5, 80(%rsp)\n	movdqu %xmm6, 96(%rsp)\n	movdqu %xmm7, 112(%rsp)\n"
	"	movdqu %xmm8, 128(%rsp)\n	movdqu %xmm9, 144(%rsp)\n	movdqu %xmm10, 160(%rsp)\n	movdqu %xmm11, 176(%rsp)\n"
	"	movdqu %xmm12, 192(%rsp)\n	movdqu %xmm13, 208(%rsp)\n	movdqu %xmm14, 224(%rsp)\n	movdqu %xmm15, 240(%rsp)\n"
	"	call sp_barrier_store@PLT\n"
	"	movdqu 0(%rsp), %xmm0\n	movdqu 16(%rsp), %xmm1\n	movdqu 32(%rsp), %xmm2\n	movdqu 48(%rsp), %xmm3\n"
	"	movdqu 64(%rsp), %xmm4\n	movdqu 80(%rsp), %xmm5\n	movdqu 96(%rsp), %xmm6\n	movdqu 112(%rsp), %xmm7\n"
	"	movdqu 128(%rsp), %xmm8\n	movdqu 144(%rsp), %xmm9\n	movdqu 160(%rsp), %xmm10\n	movdqu 176(%rsp), %xmm11\n"
	"	movdqu 192(%rsp), %xmm12\n	movdqu 208(%rsp), %xmm13\n	movdqu 224(%rsp), %xmm14\n	movdqu 240(%rsp), %xmm15\n"
	"	add $256, %rsp\n"
	"	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n"
	"	pop %rsi\n	pop %rdx\n	pop %rcx\n	pop %rax\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	pop %rdi\n"
	"	ret\n"
	SP_THUNK (rax) SP_THUNK (rcx) SP_THUNK (rdx) SP_THUNK (rbx) SP_THUNK (rbp) SP_THUNK (rsi) SP_THUNK (rdi)
	SP_THUNK (r8) SP_THUNK (r9) SP_THUNK (r10) SP_THUNK (r12) SP_THUNK (r13) SP_THUNK (r14) SP_THUNK (r15)
);

extern char sp_barrier_thunk_rax [], sp_barrier_thunk_rcx [], sp_barrier_thunk_rdx [], sp_barrier_thunk_rbx [],
	sp_barrier_thunk_rbp [], sp_barrier_thunk_rsi [], sp_barrier_thunk_rdi [], sp_barrier_thunk_r8 [],
	sp_barrier_thunk_r9 [], sp_barrier_thunk_r10 [], sp_barrier_thunk_r12 [], sp_barrier_thunk_r13 [],
	sp_barrier_thunk_r14 [], sp_barrier_thunk_r15 [];

/* By register number (rsp and r11, the scratch register, never hold an object here). */
static char *const sp_barrier_thunks [16] = {
	[AMD64_RAX] = sp_barrier_thunk_rax, [AMD64_RCX] = sp_barrier_thunk_rcx, [AMD64_RDX] = sp_barrier_thunk_rdx,
	[AMD64_RBX] = sp_barrier_thunk_rbx, [AMD64_RBP] = sp_barrier_thunk_rbp, [AMD64_RSI] = sp_barrier_thunk_rsi,
	[AMD64_RDI] = sp_barrier_thunk_rdi, [AMD64_R8] = sp_barrier_thunk_r8, [AMD64_R9] = sp_barrier_thunk_r9,
	[AMD64_R10] = sp_barrier_thunk_r10, [AMD64_R12] = sp_barrier_thunk_r12, [AMD64_R13] = sp_barrier_thunk_r13,
	[AMD64_R14] = sp_barrier_thunk_r14, [AMD64_R15] = sp_barrier_thunk_r15,
};

guint8 *
sp_jit_amd64_emit_barrier (guint8 *code, int obj_reg)
{
	g_assert (obj_reg >= 0 && obj_reg < 16 && sp_barrier_thunks [obj_reg]);
	amd64_mov_reg_imm_size (code, AMD64_R11, (gsize)&sp_barrier_active, 8);
	amd64_alu_membase_imm_size (code, X86_CMP, AMD64_R11, 0, 0, 4);
	guint8 *skip = code;
	x86_branch8 (code, X86_CC_EQ, 0, FALSE);
	amd64_mov_reg_imm_size (code, AMD64_R11, (gsize)sp_barrier_thunks [obj_reg], 8);
	amd64_call_reg (code, AMD64_R11);
	skip [1] = (guint8)(code - (skip + 2));
	return code;
}
#endif

void
sp_jit_emit_store_barrier (MonoCompile *cfg, MonoInst *obj)
{
	/* cfg->current_method: the method being converted, the inlined one when inlining. */
	MonoMethod *method = cfg->current_method ? cfg->current_method : cfg->method;
	if (obj->type != STACK_OBJ || !sp_mono_method_needs_barrier (method))
		return;
#ifdef TARGET_AMD64
	MonoInst *barrier;
	MONO_INST_NEW (cfg, barrier, OP_SP_BARRIER);
	barrier->sreg1 = obj->dreg;
	MONO_ADD_INS (cfg->cbb, barrier);
#else
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
#endif
}

/* Is parameter i of fsig a one-dimensional array? */
static gboolean
sp_jit_param_is_array (MonoMethodSignature *fsig, int i)
{
	return i < fsig->param_count && fsig->params [i]->type == MONO_TYPE_SZARRAY;
}

/*
 * Which arguments of a class-library method it writes into, or hands out
 * writable views of (bits), 0 for none: System.Array's and System.Buffer's
 * copies, Marshal's copies from native memory into an array or object, and
 * MemoryExtensions.AsSpan/AsMemory over an array.
 */
static guint
sp_jit_written_array_args (MonoMethod *cmethod, MonoMethodSignature *fsig)
{
	MonoClass *k = cmethod->klass;
	const char *ns = m_class_get_name_space (k), *cls = m_class_get_name (k), *m = cmethod->name;
	if (fsig->hasthis)
		return 0;
	if (strcmp (ns, "System.Runtime.InteropServices") == 0 && strcmp (cls, "Marshal") == 0) {
		if (strcmp (m, "Copy") == 0 && sp_jit_param_is_array (fsig, 1))
			return 1u << 1;                                  /* (IntPtr source, T[] destination, ...) */
		if (strcmp (m, "PtrToStructure") == 0 && fsig->param_count == 2 && !fsig->params [1]->byref)
			return 1u << 1;                                  /* (IntPtr ptr, object structure) */
		return 0;
	}
	if (strcmp (ns, "System") != 0)
		return 0;
	if (strcmp (cls, "MemoryExtensions") == 0)
		return (strcmp (m, "AsSpan") == 0 || strcmp (m, "AsMemory") == 0) && sp_jit_param_is_array (fsig, 0) ? 1u : 0;
	if (strcmp (cls, "Buffer") == 0)
		return strcmp (m, "BlockCopy") == 0 ? 1u << 2 : 0;      /* (src, srcOffset, dst, dstOffset, count) */
	if (strcmp (cls, "Array") != 0)
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
	/*
	 * A P/Invoke: native code may write into every object it is given (an
	 * array or a blittable class is passed by address), so each gets the
	 * barrier before the call.
	 */
	if (cmethod->flags & METHOD_ATTRIBUTE_PINVOKE_IMPL) {
		for (int i = 0; i < fsig->param_count + (fsig->hasthis ? 1 : 0); i++)
			sp_jit_emit_store_barrier (cfg, args [i]);     /* objects only (sp_jit_emit_store_barrier checks) */
		return;
	}
	guint written = sp_jit_written_array_args (cmethod, fsig);
	for (int i = 0; written && i < fsig->param_count && i < 3; i++)
		if (written & (1u << i))
			sp_jit_emit_store_barrier (cfg, args [i]);   /* only arguments that are objects (sp_jit_emit_store_barrier checks) */
}
