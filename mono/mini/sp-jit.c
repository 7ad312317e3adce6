/* sp-jit.c: see sp-jit.h.  The policy (which methods) is in metadata/sp-cycle.c. */
#include <config.h>

#include "sp-jit.h"

#include "ir-emit.h"
#include "jit-icalls.h"
#include "mini-runtime.h"

#include <string.h>

#include <mono/metadata/class-abi-details.h>
#include <mono/metadata/sp-mono.h>
#include <mono/utils/mono-memory-model.h>

void
sp_jit_before_init (void)
{
	/*
	 * Debian ships AOT code for mscorlib, compiled without barriers: when
	 * every method must be guarded, class libraries included, it is not used.
	 */
	if (sp_mono_barriers_everywhere ())
		mono_aot_mode = MONO_AOT_MODE_NONE;
	sp_barrier_flag_init ();
}

#ifdef TARGET_AMD64
#include <mono/arch/amd64/amd64-codegen.h>

/*
 * The slow path's thunks: sp_barrier_thunk_REG passes register REG to
 * sp_barrier_store (sp_addr_thunk_REG: to sp_barrier_store_addr) and
 * preserves every other register, flags aside: the caller-saved general
 * registers and xmm0-15 are saved around the call (the callee-saved ones the
 * slow path preserves itself).  The stack is realigned, so the call site's
 * alignment does not matter.  The saved registers are on the stack while the
 * slow path runs, where SGen's conservative scan of the thread's stack sees
 * (and pins) any object they refer to, should it wait for sp_lock in GC-safe
 * mode or allocate.
 */
#define SP_THUNK(prefix, reg) \
	".globl " #prefix "_" #reg "\n.hidden " #prefix "_" #reg "\n" \
	".type " #prefix "_" #reg ", @function\n" \
	#prefix "_" #reg ":\n" \
	"	push %rdi\n" \
	"	mov %" #reg ", %rdi\n" \
	"	jmp " #prefix "_common\n"

#define SP_THUNKS(prefix) \
	SP_THUNK (prefix, rax) SP_THUNK (prefix, rcx) SP_THUNK (prefix, rdx) SP_THUNK (prefix, rbx) \
	SP_THUNK (prefix, rbp) SP_THUNK (prefix, rsi) SP_THUNK (prefix, rdi) SP_THUNK (prefix, r8) \
	SP_THUNK (prefix, r9) SP_THUNK (prefix, r10) SP_THUNK (prefix, r12) SP_THUNK (prefix, r13) \
	SP_THUNK (prefix, r14) SP_THUNK (prefix, r15)

/*
 * The object thunk first asks sp_barrier_quick, which preserves every
 * register but rax: for the objects this thread's barrier handled last (a
 * loop storing into one array, or into a few objects in turn) nothing more
 * is saved or called.
 */
#define SP_THUNK_QUICK \
	"	push %rax\n" \
	"	call sp_barrier_quick@PLT\n" \
	"	test %eax, %eax\n" \
	"	pop %rax\n" \
	"	jz 1f\n" \
	"	pop %rdi\n" \
	"	ret\n" \
	"1:\n"

/* Entered from a thunk with the argument in rdi and the caller's rdi pushed. */
#define SP_THUNK_COMMON(prefix, target, quick) \
	".p2align 4\n" \
	#prefix "_common:\n" \
	quick \
	"	push %rbp\n" \
	"	mov %rsp, %rbp\n" \
	"	and $-16, %rsp\n" \
	"	push %rax\n	push %rcx\n	push %rdx\n	push %rsi\n" \
	"	push %r8\n	push %r9\n	push %r10\n	push %r11\n" \
	"	sub $256, %rsp\n" \
	"	movdqu %xmm0, 0(%rsp)\n	movdqu %xmm1, 16(%rsp)\n	movdqu %xmm2, 32(%rsp)\n	movdqu %xmm3, 48(%rsp)\n" \
	"	movdqu %xmm4, 64(%rsp)\n	movdqu %xmm5, 80(%rsp)\n	movdqu %xmm6, 96(%rsp)\n	movdqu %xmm7, 112(%rsp)\n" \
	"	movdqu %xmm8, 128(%rsp)\n	movdqu %xmm9, 144(%rsp)\n	movdqu %xmm10, 160(%rsp)\n	movdqu %xmm11, 176(%rsp)\n" \
	"	movdqu %xmm12, 192(%rsp)\n	movdqu %xmm13, 208(%rsp)\n	movdqu %xmm14, 224(%rsp)\n	movdqu %xmm15, 240(%rsp)\n" \
	"	call " #target "@PLT\n" \
	"	movdqu 0(%rsp), %xmm0\n	movdqu 16(%rsp), %xmm1\n	movdqu 32(%rsp), %xmm2\n	movdqu 48(%rsp), %xmm3\n" \
	"	movdqu 64(%rsp), %xmm4\n	movdqu 80(%rsp), %xmm5\n	movdqu 96(%rsp), %xmm6\n	movdqu 112(%rsp), %xmm7\n" \
	"	movdqu 128(%rsp), %xmm8\n	movdqu 144(%rsp), %xmm9\n	movdqu 160(%rsp), %xmm10\n	movdqu 176(%rsp), %xmm11\n" \
	"	movdqu 192(%rsp), %xmm12\n	movdqu 208(%rsp), %xmm13\n	movdqu 224(%rsp), %xmm14\n	movdqu 240(%rsp), %xmm15\n" \
	"	add $256, %rsp\n" \
	"	pop %r11\n	pop %r10\n	pop %r9\n	pop %r8\n" \
	"	pop %rsi\n	pop %rdx\n	pop %rcx\n	pop %rax\n" \
	"	mov %rbp, %rsp\n" \
	"	pop %rbp\n" \
	"	pop %rdi\n" \
	"	ret\n"

__asm__ (
	".text\n"
	SP_THUNK_COMMON (sp_barrier_thunk, sp_barrier_store, SP_THUNK_QUICK)
	SP_THUNKS (sp_barrier_thunk)
	SP_THUNK_COMMON (sp_addr_thunk, sp_barrier_store_addr, "")
	SP_THUNKS (sp_addr_thunk)
);

#define SP_THUNK_DECLS(prefix) \
	extern char prefix##_rax [], prefix##_rcx [], prefix##_rdx [], prefix##_rbx [], prefix##_rbp [], \
		prefix##_rsi [], prefix##_rdi [], prefix##_r8 [], prefix##_r9 [], prefix##_r10 [], prefix##_r12 [], \
		prefix##_r13 [], prefix##_r14 [], prefix##_r15 [];
SP_THUNK_DECLS (sp_barrier_thunk)
SP_THUNK_DECLS (sp_addr_thunk)

/* By register number (rsp and r11, the scratch register, never hold an argument here). */
#define SP_THUNK_TABLE(prefix) { \
	[AMD64_RAX] = prefix##_rax, [AMD64_RCX] = prefix##_rcx, [AMD64_RDX] = prefix##_rdx, \
	[AMD64_RBX] = prefix##_rbx, [AMD64_RBP] = prefix##_rbp, [AMD64_RSI] = prefix##_rsi, \
	[AMD64_RDI] = prefix##_rdi, [AMD64_R8] = prefix##_r8, [AMD64_R9] = prefix##_r9, \
	[AMD64_R10] = prefix##_r10, [AMD64_R12] = prefix##_r12, [AMD64_R13] = prefix##_r13, \
	[AMD64_R14] = prefix##_r14, [AMD64_R15] = prefix##_r15, }
static char *const sp_barrier_thunks [2][16] = { SP_THUNK_TABLE (sp_barrier_thunk), SP_THUNK_TABLE (sp_addr_thunk) };

/*
 * The slow paths of the method being emitted, out of line: each barrier's
 * call sits after the method's code (sp_jit_amd64_emit_barrier_stubs), so
 * the inline test falls through when no cycle runs.  A taken branch on every
 * guarded store cost tight store loops up to half their speed: a core starts
 * few taken branches a cycle, and the loop's back edge is one already.
 * Offsets, not pointers: the code buffer may move as it grows.  Kept per
 * thread for the method this thread is emitting (a JIT thread emits one
 * method at a time), in its mempool, and reset at its first basic block.
 */
typedef struct SpBarrierStub {
	struct SpBarrierStub *next;
	guint32 rel32_offset;           /* of the inline jne's displacement */
	char *thunk;
} SpBarrierStub;

static __thread MonoCompile *sp_stubs_cfg;
static __thread SpBarrierStub *sp_stubs;
static __thread guint32 sp_stubs_count;

static void
sp_jit_amd64_stubs_reset (MonoCompile *cfg)
{
	sp_stubs_cfg = cfg;
	sp_stubs = NULL;
	sp_stubs_count = 0;
}

/* A stub: movabs $thunk, %r11 (10 bytes); call *%r11 (3); jmp back (5). */
#define SP_STUB_BYTES 18

guint8 *
sp_jit_amd64_emit_barrier (MonoCompile *cfg, guint8 *code, int reg, gboolean address)
{
	/* An address the allocator put in rsp itself is on the stack: nothing to guard. */
	if (address && reg == AMD64_RSP)
		return code;
	g_assert (reg >= 0 && reg < 16 && sp_barrier_thunks [address][reg]);
	g_assert (sp_stubs_cfg == cfg);
	if ((gsize)sp_barrier_flag < 0x80000000u) {
		/* cmpl $0, flag: a 32-bit absolute address (ModRM /7 with SIB, no base, no index) */
		guint32 flag = (guint32)(gsize)sp_barrier_flag;
		*code++ = 0x83;
		*code++ = 0x3c;
		*code++ = 0x25;
		memcpy (code, &flag, 4);
		code += 4;
		*code++ = 0x00;
	} else {
		amd64_mov_reg_imm_size (code, AMD64_R11, (gsize)sp_barrier_flag, 8);
		amd64_alu_membase_imm_size (code, X86_CMP, AMD64_R11, 0, 0, 4);
	}
	/* jne rel32, to the stub; the displacement is filled in when the stub is emitted */
	*code++ = 0x0f;
	*code++ = 0x85;
	SpBarrierStub *stub = (SpBarrierStub *)mono_mempool_alloc (cfg->mempool, sizeof *stub);
	stub->rel32_offset = (guint32)(code - cfg->native_code);
	stub->thunk = sp_barrier_thunks [address][reg];
	stub->next = sp_stubs;
	sp_stubs = stub;
	sp_stubs_count++;
	memset (code, 0, 4);
	code += 4;
	return code;
}

static void
sp_jit_amd64_patch_rel32 (guint8 *at, const guint8 *target)
{
	gint32 rel = (gint32)(target - (at + 4));
	memcpy (at, &rel, 4);
}

void
sp_jit_amd64_emit_barrier_stubs (MonoCompile *cfg)
{
	if (sp_stubs_cfg != cfg || !sp_stubs)
		return;
	guint8 *code = realloc_code (cfg, sp_stubs_count * SP_STUB_BYTES);
	for (SpBarrierStub *stub = sp_stubs; stub; stub = stub->next) {
		guint8 *jne_rel32 = cfg->native_code + stub->rel32_offset;
		sp_jit_amd64_patch_rel32 (jne_rel32, code);
		amd64_mov_reg_imm_size (code, AMD64_R11, (gsize)stub->thunk, 8);
		amd64_call_reg (code, AMD64_R11);
		*code++ = 0xe9;                 /* jmp rel32, back after the jne */
		sp_jit_amd64_patch_rel32 (code, jne_rel32 + 4);
		code += 4;
	}
	set_code_cursor (cfg, code);
	sp_jit_amd64_stubs_reset (NULL);
}

/* Can this instruction reach a safepoint, or change registers the spec does not name? */
static gboolean
sp_jit_amd64_may_pause (MonoInst *ins, const char *spec)
{
	return MONO_IS_CALL (ins) || spec [MONO_INST_CLOB] == 'c' || ins->opcode == OP_GC_SAFE_POINT ||
		ins->opcode == OP_SEQ_POINT || ins->opcode == OP_GENERIC_CLASS_INIT || ins->opcode == OP_CALL_HANDLER ||
		ins->opcode == OP_SP_BARRIER;      /* an address barrier (the object ones are handled by the caller) */
}

/* An integer register's number (the masks below have a bit for each). */
static gboolean
sp_elide_is_int_reg (int reg)
{
	return reg >= 0 && reg < 32;
}

/*
 * The callee-saved registers the global allocator gives variables.  The local
 * allocator never uses them, and a call preserves them: a barrier on one of
 * them, in a loop where no instruction writes it, is on the same object all
 * through the loop, and at the loop's entries (the variable is live there).
 */
#define SP_HOIST_REGS ((1u << AMD64_RBX) | (1u << AMD64_R12) | (1u << AMD64_R13) | (1u << AMD64_R14) | (1u << AMD64_R15))

/*
 * The integer registers an instruction may write: its destination, a fixed
 * clobber ('1': the destination is the first source, counted already); a
 * call, all but SP_HOIST_REGS; ~0u when not known.  Absent fields are 0 in
 * the CPU description; 'b' is a store's base register (read), 'f' and 'x'
 * are xmm registers.
 */
static guint32
sp_jit_amd64_regs_written (MonoInst *ins, const char *spec)
{
	guint32 written = 0;
	char dest = spec [MONO_INST_DEST];
	if (dest && dest != 'b' && dest != 'f' && dest != 'x' && sp_elide_is_int_reg (ins->dreg))
		written |= 1u << ins->dreg;
	char clob = spec [MONO_INST_CLOB];
	if (clob == 'c' || MONO_IS_CALL (ins))
		written |= ~SP_HOIST_REGS;
	else if (clob && clob != '1') {
		int reg = MONO_ARCH_INST_FIXED_REG (clob);
		written |= reg >= 0 ? 1u << reg : ~0u;
	}
	return written;
}

/*
 * What sp_jit_amd64_elide_barriers knows at a point of a basic block: the
 * integer registers holding an object a barrier handled since the last
 * pause, and which register each one was last copied from (the allocator
 * often passes an object to the barrier in a copy).
 */
typedef struct {
	guint32 handled;
	gint8 copy_of [32];
} SpElide;

static void
sp_elide_forget_all (SpElide *e)
{
	e->handled = 0;
	memset (e->copy_of, -1, sizeof e->copy_of);
}

/* Register reg now holds something else. */
static void
sp_elide_kill (SpElide *e, int reg)
{
	e->handled &= ~(1u << reg);
	e->copy_of [reg] = -1;
	for (int r = 0; r < 32; r++)
		if (e->copy_of [r] == reg)
			e->copy_of [r] = -1;
}

/* A barrier handled the object in reg, and so in every register known to hold a copy of it. */
static void
sp_elide_handled (SpElide *e, int reg)
{
	e->handled |= 1u << reg;
	if (e->copy_of [reg] >= 0)
		e->handled |= 1u << e->copy_of [reg];
	for (int r = 0; r < 32; r++)
		if (e->copy_of [r] == reg)
			e->handled |= 1u << r;
}

static void
sp_jit_amd64_elide_barriers (MonoBasicBlock *bb)
{
	SpElide e;
	MonoInst *ins;
	sp_elide_forget_all (&e);
	MONO_BB_FOR_EACH_INS (bb, ins) {
		if (ins->opcode == OP_SP_BARRIER && !ins->inst_c0 && sp_elide_is_int_reg (ins->sreg1)) {
			if (e.handled & (1u << ins->sreg1))
				NULLIFY_INS (ins);
			else
				sp_elide_handled (&e, ins->sreg1);
			continue;
		}
		if (ins->opcode == OP_NOP || ins->opcode == OP_IL_SEQ_POINT)
			continue;
		const char *spec = ins_get_spec (ins->opcode);
		if (sp_jit_amd64_may_pause (ins, spec)) {
			sp_elide_forget_all (&e);
			continue;
		}
		guint32 written = sp_jit_amd64_regs_written (ins, spec);
		if (written == ~0u) {
			sp_elide_forget_all (&e);
			continue;
		}
		for (int reg = 0; reg < 32; reg++)
			if (written & (1u << reg))
				sp_elide_kill (&e, reg);
		if (ins->opcode == OP_MOVE && sp_elide_is_int_reg (ins->dreg) && sp_elide_is_int_reg (ins->sreg1) && ins->sreg1 != ins->dreg) {
			e.copy_of [ins->dreg] = (gint8)ins->sreg1;
			if (e.handled & (1u << ins->sreg1))
				e.handled |= 1u << ins->dreg;
		}
	}
}

/* ---- Barriers out of loops -------------------------------------------------- */

typedef enum {
	SP_LOOP_PLAIN,          /* cannot reach a safepoint */
	SP_LOOP_OBJECT_BARRIER,
	SP_LOOP_POLL,           /* OP_GC_SAFE_POINT: a safepoint only on its slow path */
	SP_LOOP_PAUSE,          /* a call, or anything else that may reach a safepoint */
	SP_LOOP_REFUSE          /* exception handling, debugger sequence points: leave the loop alone */
} SpLoopIns;

static SpLoopIns
sp_jit_amd64_loop_ins (MonoInst *ins, const char *spec)
{
	switch (ins->opcode) {
	case OP_SP_BARRIER:
		return ins->inst_c0 ? SP_LOOP_PAUSE : SP_LOOP_OBJECT_BARRIER;
	case OP_GC_SAFE_POINT:
		return SP_LOOP_POLL;
	case OP_SEQ_POINT: case OP_CALL_HANDLER: case OP_START_HANDLER: case OP_ENDFINALLY: case OP_ENDFILTER:
		return SP_LOOP_REFUSE;
	default:
		return sp_jit_amd64_may_pause (ins, spec) ? SP_LOOP_PAUSE : SP_LOOP_PLAIN;
	}
}

static gboolean
sp_jit_amd64_is_compare (MonoInst *ins)
{
	switch (ins->opcode) {
	case OP_COMPARE: case OP_LCOMPARE: case OP_ICOMPARE: case OP_COMPARE_IMM: case OP_ICOMPARE_IMM:
	case OP_LCOMPARE_IMM: case OP_FCOMPARE: case OP_RCOMPARE: case OP_X86_TEST_NULL: case OP_AMD64_TEST_NULL:
	case OP_X86_COMPARE_MEMBASE_REG: case OP_X86_COMPARE_MEMBASE_IMM: case OP_X86_COMPARE_REG_MEMBASE:
	case OP_X86_COMPARE_MEMBASE8_IMM: case OP_AMD64_ICOMPARE_MEMBASE_REG: case OP_AMD64_ICOMPARE_MEMBASE_IMM:
	case OP_AMD64_ICOMPARE_REG_MEMBASE: case OP_AMD64_COMPARE_MEMBASE_REG: case OP_AMD64_COMPARE_MEMBASE_IMM:
	case OP_AMD64_COMPARE_REG_MEMBASE:
		return TRUE;
	default:
		return FALSE;
	}
}

/*
 * Where barriers go at the end of a block that enters a loop: before its
 * branch, and before the compare a conditional branch tests (a barrier
 * changes the flags); *before NULL: after its last instruction (it falls
 * through).  FALSE for an end not understood (a switch, a branch not right
 * after its compare).
 */
static gboolean
sp_jit_amd64_loop_entry_point (MonoBasicBlock *bb, MonoInst **before)
{
	MonoInst *last = bb->last_ins;
	*before = NULL;
	if (!last || !MONO_IS_BRANCH_OP (last))
		return TRUE;
	if (last->opcode == OP_BR) {
		*before = last;
		return TRUE;
	}
	if (MONO_IS_COND_BRANCH_OP (last) && last->prev && sp_jit_amd64_is_compare (last->prev)) {
		*before = last->prev;
		return TRUE;
	}
	return FALSE;
}

/* Object barriers on the registers in regs: after `after`, or before `before` when after is NULL; the last one made. */
static MonoInst *
sp_jit_amd64_insert_barriers (MonoCompile *cfg, MonoBasicBlock *bb, MonoInst *after, MonoInst *before, guint32 regs)
{
	MonoInst *last = after;
	for (int reg = 0; reg < 16; reg++) {
		if (!(regs & (1u << reg)))
			continue;
		MonoInst *barrier;
		MONO_INST_NEW (cfg, barrier, OP_SP_BARRIER);
		barrier->sreg1 = reg;
		barrier->inst_c0 = 0;
		if (last)
			mono_bblock_insert_after_ins (bb, last, barrier);
		else if (before)
			mono_bblock_insert_before_ins (bb, before, barrier);
		else
			mono_bblock_insert_after_ins (bb, bb->last_ins, barrier);
		last = barrier;
		bb->max_length += ins_get_size (OP_SP_BARRIER);
	}
	return last;
}

/* The method's loops (sp_jit_amd64_hoist_barriers). */
typedef struct {
	MonoCompile *cfg;
	MonoBasicBlock **by_num;        /* the method's blocks, by block_num */
	int *comp;                      /* the component of each block, by block_num */
	int *entry_done;                /* by block_num: the component + 1 whose barriers a block entering it has */
	int n;                          /* the size of these: the highest block_num + 1 */
} SpLoops;

/* A register's bit in a mask of integer registers; 0 for any other. */
static guint32
sp_reg_bit (int reg)
{
	return sp_elide_is_int_reg (reg) ? 1u << reg : 0;
}

static gboolean
sp_loops_is_entry (SpLoops *l, MonoBasicBlock *pred, int c)
{
	return pred->block_num >= 0 && pred->block_num < l->n && l->by_num [pred->block_num] == pred && l->comp [pred->block_num] != c;
}

/* The registers whose barriers may leave loop c (its blocks), or 0. */
static guint32
sp_loop_invariant_barriers (SpLoops *l, MonoBasicBlock **blocks, int count, int c)
{
	guint32 written = 0, barriered = 0;
	MonoInst *ins, *before;
	for (int i = 0; i < count; i++) {
		/* A handler is entered by the runtime, the first block by the call: neither has an entry to guard. */
		if ((blocks [i]->flags & BB_EXCEPTION_HANDLER) || blocks [i] == l->cfg->bb_entry)
			return 0;
		MONO_BB_FOR_EACH_INS (blocks [i], ins) {
			const char *spec = ins_get_spec (ins->opcode);
			SpLoopIns kind = sp_jit_amd64_loop_ins (ins, spec);
			if (kind == SP_LOOP_REFUSE)
				return 0;
			if (kind == SP_LOOP_OBJECT_BARRIER)
				barriered |= sp_reg_bit (ins->sreg1);
			else
				written |= sp_jit_amd64_regs_written (ins, spec);
		}
	}
	for (int i = 0; i < count; i++)
		for (int k = 0; k < blocks [i]->in_count; k++)
			if (sp_loops_is_entry (l, blocks [i]->in_bb [k], c) && !sp_jit_amd64_loop_entry_point (blocks [i]->in_bb [k], &before))
				return 0;
	return barriered & SP_HOIST_REGS & ~written;
}

/* On the way into loop c: barriers on hoist at the end of each block entering it, after whatever safepoint came before. */
static void
sp_loop_guard_entries (SpLoops *l, MonoBasicBlock **blocks, int count, int c, guint32 hoist)
{
	MonoInst *before;
	for (int i = 0; i < count; i++)
		for (int k = 0; k < blocks [i]->in_count; k++) {
			MonoBasicBlock *pred = blocks [i]->in_bb [k];
			if (!sp_loops_is_entry (l, pred, c) || l->entry_done [pred->block_num] == c + 1)
				continue;
			l->entry_done [pred->block_num] = c + 1;
			sp_jit_amd64_loop_entry_point (pred, &before);
			sp_jit_amd64_insert_barriers (l->cfg, pred, NULL, before, hoist);
		}
}

/* In the loop: barriers on hoist after each call and on each poll's slow path, none before the stores; how many dropped. */
static int
sp_loop_move_barriers (SpLoops *l, MonoBasicBlock **blocks, int count, guint32 hoist)
{
	int dropped = 0;
	for (int i = 0; i < count; i++)
		for (MonoInst *ins = blocks [i]->code; ins; ins = ins->next) {
			SpLoopIns kind = sp_jit_amd64_loop_ins (ins, ins_get_spec (ins->opcode));
			if (kind == SP_LOOP_OBJECT_BARRIER && (hoist & sp_reg_bit (ins->sreg1))) {
				NULLIFY_INS (ins);
				dropped++;
			} else if (kind == SP_LOOP_POLL)
				ins->inst_c1 |= hoist;
			else if (kind == SP_LOOP_PAUSE)
				ins = sp_jit_amd64_insert_barriers (l->cfg, blocks [i], ins, NULL, hoist);
		}
	return dropped;
}

/*
 * One loop: the blocks of a strongly connected component of the control-flow
 * graph (loops nested in each other are one).  Returns how many barriers
 * left it.
 */
static int
sp_jit_amd64_hoist_from_loop (SpLoops *l, MonoBasicBlock **blocks, int count, int c)
{
	guint32 hoist = sp_loop_invariant_barriers (l, blocks, count, c);
	if (!hoist)
		return 0;
	sp_loop_guard_entries (l, blocks, count, c, hoist);
	return sp_loop_move_barriers (l, blocks, count, hoist);
}

/* Tarjan's strongly connected components, without recursion (a method may have thousands of blocks). */
static int
sp_loops_find (SpLoops *l, int n)
{
	MonoMemPool *mp = l->cfg->mempool;
	int *index = (int *)mono_mempool_alloc (mp, n * sizeof (int)), *low = (int *)mono_mempool_alloc (mp, n * sizeof (int));
	int *stack = (int *)mono_mempool_alloc (mp, n * sizeof (int)), *next_edge = (int *)mono_mempool_alloc (mp, n * sizeof (int));
	gboolean *on_stack = (gboolean *)mono_mempool_alloc0 (mp, n * sizeof (gboolean));
	MonoBasicBlock **frames = (MonoBasicBlock **)mono_mempool_alloc (mp, n * sizeof (MonoBasicBlock *));
	int depth = 0, top = 0, counter = 0, ncomps = 0;
	for (int i = 0; i < n; i++)
		index [i] = -1;
#define SP_LOOPS_VISIT(b) do { \
		int b_ = (b)->block_num; \
		index [b_] = low [b_] = counter++; \
		stack [top++] = b_; on_stack [b_] = TRUE; \
		frames [depth] = (b); next_edge [depth] = 0; depth++; \
	} while (0)
	for (MonoBasicBlock *bb = l->cfg->bb_entry; bb; bb = bb->next_bb) {
		if (index [bb->block_num] >= 0)
			continue;
		SP_LOOPS_VISIT (bb);
		while (depth) {
			MonoBasicBlock *v = frames [depth - 1];
			int vi = v->block_num;
			if (next_edge [depth - 1] < v->out_count) {
				MonoBasicBlock *w = v->out_bb [next_edge [depth - 1]++];
				if (w->block_num < 0 || w->block_num >= n || l->by_num [w->block_num] != w)
					continue;       /* not emitted: removed */
				if (index [w->block_num] < 0)
					SP_LOOPS_VISIT (w);
				else if (on_stack [w->block_num])
					low [vi] = MIN (low [vi], index [w->block_num]);
				continue;
			}
			if (--depth)
				low [frames [depth - 1]->block_num] = MIN (low [frames [depth - 1]->block_num], low [vi]);
			if (low [vi] == index [vi]) {
				int wi;
				do {
					wi = stack [--top];
					on_stack [wi] = FALSE;
					l->comp [wi] = ncomps;
				} while (wi != vi);
				ncomps++;
			}
		}
	}
#undef SP_LOOPS_VISIT
	return ncomps;
}

static gboolean
sp_jit_trace (void)
{
	static int trace = -1;
	if (trace < 0)
		trace = g_getenv ("SPMONO_JIT_TRACE") != NULL;
	return trace;
}

/* The method's blocks by number; FALSE when the numbering is not understood (negative, or one number twice). */
static gboolean
sp_loops_number (SpLoops *l)
{
	MonoCompile *cfg = l->cfg;
	MonoBasicBlock *bb;
	/* Block numbers, not cfg->num_bblocks: passes renumber and remove blocks, and the count is not kept. */
	l->n = 0;
	for (bb = cfg->bb_entry; bb; bb = bb->next_bb)
		if (bb->block_num < 0)
			return FALSE;
		else
			l->n = MAX (l->n, bb->block_num + 1);
	l->by_num = (MonoBasicBlock **)mono_mempool_alloc0 (cfg->mempool, l->n * sizeof (MonoBasicBlock *));
	l->comp = (int *)mono_mempool_alloc0 (cfg->mempool, l->n * sizeof (int));
	l->entry_done = (int *)mono_mempool_alloc0 (cfg->mempool, l->n * sizeof (int));
	for (bb = cfg->bb_entry; bb; bb = bb->next_bb) {
		if (l->by_num [bb->block_num])
			return FALSE;
		l->by_num [bb->block_num] = bb;
	}
	return TRUE;
}

/* The blocks of each component together (a counting sort): component c's are blocks [start [c] .. start [c + 1]). */
static MonoBasicBlock **
sp_loops_group (SpLoops *l, int ncomps, int **start_out)
{
	MonoMemPool *mp = l->cfg->mempool;
	int *start = (int *)mono_mempool_alloc0 (mp, (ncomps + 1) * sizeof (int));
	int *fill = (int *)mono_mempool_alloc0 (mp, ncomps * sizeof (int));
	MonoBasicBlock **blocks = (MonoBasicBlock **)mono_mempool_alloc (mp, l->n * sizeof (MonoBasicBlock *));
	MonoBasicBlock *bb;
	for (bb = l->cfg->bb_entry; bb; bb = bb->next_bb)
		start [l->comp [bb->block_num] + 1]++;
	for (int c = 0; c < ncomps; c++)
		start [c + 1] += start [c];
	for (bb = l->cfg->bb_entry; bb; bb = bb->next_bb) {
		int c = l->comp [bb->block_num];
		blocks [start [c] + fill [c]++] = bb;
	}
	*start_out = start;
	return blocks;
}

static gboolean
sp_jit_has_invariant_candidate (MonoCompile *cfg)
{
	MonoInst *ins;
	for (MonoBasicBlock *bb = cfg->bb_entry; bb; bb = bb->next_bb)
		MONO_BB_FOR_EACH_INS (bb, ins)
			if (ins->opcode == OP_SP_BARRIER && !ins->inst_c0 && (SP_HOIST_REGS & sp_reg_bit (ins->sreg1)))
				return TRUE;
	return FALSE;
}

/*
 * Before the method's first block is emitted: every loop's barriers on
 * objects it does not change leave the loop (sp-jit.h says why that is sound).
 * A loop is a component with a cycle: more than one block, or a block that
 * branches to itself.
 */
static void
sp_jit_amd64_hoist_barriers (MonoCompile *cfg)
{
	SpLoops l = { cfg, NULL, NULL, NULL, 0 };
	int *start;
	if (!sp_jit_has_invariant_candidate (cfg) || !sp_loops_number (&l))
		return;
	int ncomps = sp_loops_find (&l, l.n);
	MonoBasicBlock **blocks = sp_loops_group (&l, ncomps, &start);
	int dropped = 0;
	for (int c = 0; c < ncomps; c++) {
		int count = start [c + 1] - start [c];
		MonoBasicBlock *only = blocks [start [c]];
		gboolean cyclic = count > 1;
		for (int k = 0; !cyclic && k < only->out_count; k++)
			cyclic = only->out_bb [k] == only;
		if (cyclic)
			dropped += sp_jit_amd64_hoist_from_loop (&l, blocks + start [c], count, c);
	}
	if (dropped && sp_jit_trace ()) {
		char *name = mono_method_full_name (cfg->method, TRUE);
		g_print ("spmono: jit: %s: %d barrier(s) out of loops\n", name, dropped);
		g_free (name);
	}
}

void
sp_jit_amd64_before_block (MonoCompile *cfg, MonoBasicBlock *bb)
{
	if (bb == cfg->bb_entry) {
		sp_jit_amd64_stubs_reset (cfg);      /* a new method: no slow paths yet */
		sp_jit_amd64_hoist_barriers (cfg);
	}
	sp_jit_amd64_elide_barriers (bb);
}

guint8 *
sp_jit_amd64_emit_poll_barriers (MonoCompile *cfg, guint8 *code, MonoInst *poll)
{
	for (int reg = 0; reg < 16; reg++)
		if ((guint32)poll->inst_c1 & (1u << reg))
			code = sp_jit_amd64_emit_barrier (cfg, code, reg, FALSE);
	return code;
}
#endif

/* The method whose IL is being converted: the inlined one when inlining. */
static gboolean
sp_jit_current_method_needs_barrier (MonoCompile *cfg)
{
	return sp_mono_method_needs_barrier (cfg->current_method ? cfg->current_method : cfg->method);
}

/* The portable test: a branch on sp_barrier_active around what follows, up to the returned block. */
static MonoBasicBlock *
sp_jit_begin_guard (MonoCompile *cfg)
{
	MonoInst *flag_addr;
	MonoBasicBlock *done_bb;
	int flag_reg = alloc_ireg (cfg);
	EMIT_NEW_PCONST (cfg, flag_addr, (gpointer)sp_barrier_flag);
	MONO_EMIT_NEW_LOAD_MEMBASE_OP (cfg, OP_LOADI4_MEMBASE, flag_reg, flag_addr->dreg, 0);
	NEW_BBLOCK (cfg, done_bb);
	MONO_EMIT_NEW_BIALU_IMM (cfg, OP_COMPARE_IMM, -1, flag_reg, 0);
	MONO_EMIT_NEW_BRANCH_BLOCK (cfg, OP_IBEQ, done_bb);
	return done_bb;
}

/* if (sp_barrier_active) sp_barrier_store (arg), or sp_barrier_store_addr (arg) when `address`. */
static void
sp_jit_emit_guarded_call (MonoCompile *cfg, MonoInst *arg, gboolean address)
{
#ifdef TARGET_AMD64
	MonoInst *barrier;
	MONO_INST_NEW (cfg, barrier, OP_SP_BARRIER);
	barrier->sreg1 = arg->dreg;
	barrier->inst_c0 = address;
	MONO_ADD_INS (cfg->cbb, barrier);
#else
	MonoBasicBlock *done_bb = sp_jit_begin_guard (cfg);
	if (address)
		mono_emit_jit_icall (cfg, sp_barrier_store_addr, &arg);
	else
		mono_emit_jit_icall (cfg, sp_barrier_store, &arg);
	MONO_START_BB (cfg, done_bb);
#endif
}

void
sp_jit_emit_store_barrier (MonoCompile *cfg, MonoInst *obj)
{
	if (obj->type == STACK_OBJ && sp_jit_current_method_needs_barrier (cfg))
		sp_jit_emit_guarded_call (cfg, obj, FALSE);
}

/*
 * Does a store through addr need the address barrier?  Only through a managed
 * or native pointer (not a local's or an argument's address), and not in the
 * runtime's own wrappers: their stores through addresses initialize objects
 * just allocated (the managed allocator) or native structures, or land where
 * the caller's object barrier already ran (stelem.ref, PtrToStructure).
 */
/*
 * The type check of a stelem.ref, which may throw and may reach a
 * safepoint: inline when the object is NULL or its class is the array's
 * element class or the element class is object, otherwise Mono's JIT icall
 * mono_helper_stelem_ref_check (ArrayTypeMismatchException, through its
 * wrapper).
 */
static void
sp_jit_emit_ref_store_check (MonoCompile *cfg, MonoInst *array, MonoInst *val)
{
	MonoBasicBlock *slow_bb, *done_bb;
	MonoInst *object_class, *iargs [2] = { array, val };
	int array_vtable = alloc_preg (cfg), array_class = alloc_preg (cfg), element_class = alloc_preg (cfg);
	int val_vtable = alloc_preg (cfg), val_class = alloc_preg (cfg);
	NEW_BBLOCK (cfg, slow_bb);
	NEW_BBLOCK (cfg, done_bb);
	MONO_EMIT_NEW_BIALU_IMM (cfg, OP_COMPARE_IMM, -1, val->dreg, 0);
	MONO_EMIT_NEW_BRANCH_BLOCK (cfg, OP_PBEQ, done_bb);
	MONO_EMIT_NEW_LOAD_MEMBASE_FAULT (cfg, array_vtable, array->dreg, MONO_STRUCT_OFFSET (MonoObject, vtable));
	MONO_EMIT_NEW_LOAD_MEMBASE (cfg, array_class, array_vtable, MONO_STRUCT_OFFSET (MonoVTable, klass));
	MONO_EMIT_NEW_LOAD_MEMBASE (cfg, element_class, array_class, m_class_offsetof_element_class ());
	MONO_EMIT_NEW_LOAD_MEMBASE (cfg, val_vtable, val->dreg, MONO_STRUCT_OFFSET (MonoObject, vtable));
	MONO_EMIT_NEW_LOAD_MEMBASE (cfg, val_class, val_vtable, MONO_STRUCT_OFFSET (MonoVTable, klass));
	MONO_EMIT_NEW_BIALU (cfg, OP_COMPARE, -1, val_class, element_class);
	MONO_EMIT_NEW_BRANCH_BLOCK (cfg, OP_PBEQ, done_bb);
	EMIT_NEW_PCONST (cfg, object_class, mono_defaults.object_class);
	MONO_EMIT_NEW_BIALU (cfg, OP_COMPARE, -1, element_class, object_class->dreg);
	MONO_EMIT_NEW_BRANCH_BLOCK (cfg, OP_PBEQ, done_bb);
	MONO_START_BB (cfg, slow_bb);
	mono_emit_jit_icall (cfg, mono_helper_stelem_ref_check, iargs);
	MONO_START_BB (cfg, done_bb);
}

MonoInst *
sp_jit_emit_checked_ref_store (MonoCompile *cfg, MonoClass *klass, MonoInst **sp)
{
	MonoInst *addr, *ins;
	if (sp [0]->type != STACK_OBJ || sp [2]->type != STACK_OBJ || mini_is_gsharedvt_variable_klass (klass) ||
	    !sp_jit_current_method_needs_barrier (cfg))
		return NULL;
	sp_jit_emit_ref_store_check (cfg, sp [0], sp [2]);
	sp_jit_emit_guarded_call (cfg, sp [0], FALSE);
	/*
	 * The store as mini_emit_array_store's general branch makes it, written
	 * out here rather than reached by falling into that branch: its
	 * constant-index case emits no GC write barrier (Mono never takes it for
	 * a checked reference store), and a reference store needs one.
	 */
	addr = mini_emit_ldelema_1_ins (cfg, klass, sp [0], sp [1], TRUE);
	if (!mini_debug_options.weak_memory_model)
		mini_emit_memory_barrier (cfg, MONO_MEMORY_BARRIER_REL);
	EMIT_NEW_STORE_MEMBASE_TYPE (cfg, ins, m_class_get_byval_arg (klass), addr->dreg, 0, sp [2]->dreg);
	mini_emit_write_barrier (cfg, addr, sp [2]);
	return ins;
}

/* Is addr a pointer a store may go through into an object (not a local's address, not in a wrapper)? */
static gboolean
sp_jit_address_may_reach_object (MonoCompile *cfg, MonoInst *addr)
{
	MonoMethod *method = cfg->current_method ? cfg->current_method : cfg->method;
	return (addr->type == STACK_MP || addr->type == STACK_PTR) && addr->opcode != OP_LDADDR &&
		cfg->method->wrapper_type == MONO_WRAPPER_NONE && method->wrapper_type == MONO_WRAPPER_NONE;
}

static gboolean
sp_jit_address_store_needs_barrier (MonoCompile *cfg, MonoInst *addr)
{
	return sp_jit_address_may_reach_object (cfg, addr) && sp_jit_current_method_needs_barrier (cfg);
}

void
sp_jit_emit_address_barrier (MonoCompile *cfg, MonoInst *addr)
{
	if (sp_jit_address_store_needs_barrier (cfg, addr))
		sp_jit_emit_guarded_call (cfg, addr, TRUE);
}

/* len as a native unsigned integer (an int32 length is zero-extended). */
static MonoInst *
sp_jit_native_length (MonoCompile *cfg, MonoInst *len)
{
#if SIZEOF_REGISTER == 8
	if (len->type == STACK_I4) {
		MonoInst *ext;
		MONO_INST_NEW (cfg, ext, OP_ZEXT_I4);
		ext->dreg = alloc_preg (cfg);
		ext->sreg1 = len->dreg;
		ext->type = STACK_PTR;
		MONO_ADD_INS (cfg->cbb, ext);
		return ext;
	}
#endif
	return len;
}

/* The store of len bytes at addr (len NULL: to the end of its object, the length being unknown). */
static void
sp_jit_emit_range_call (MonoCompile *cfg, MonoInst *addr, MonoInst *len)
{
	MonoInst *args [2] = { addr, NULL };
	if (len)
		args [1] = sp_jit_native_length (cfg, len);
	else
		EMIT_NEW_PCONST (cfg, args [1], (gpointer)(gssize)-1);
	MonoBasicBlock *done_bb = sp_jit_begin_guard (cfg);
	mono_emit_jit_icall (cfg, sp_barrier_store_range, args);
	MONO_START_BB (cfg, done_bb);
}

void
sp_jit_emit_range_barrier (MonoCompile *cfg, MonoInst *addr, MonoInst *len)
{
	if (sp_jit_address_store_needs_barrier (cfg, addr))
		sp_jit_emit_range_call (cfg, addr, len);
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

static gboolean
sp_jit_is (MonoMethod *cmethod, const char *ns, const char *cls)
{
	return strcmp (m_class_get_name_space (cmethod->klass), ns) == 0 && strcmp (m_class_get_name (cmethod->klass), cls) == 0;
}

static gboolean
sp_jit_first_param_is_byref (MonoMethodSignature *fsig)
{
	return !fsig->hasthis && fsig->param_count >= 1 && fsig->params [0]->byref;
}

/*
 * Class-library methods that store through an address they are given, most
 * of them expanded inline by the JIT (so no stind of theirs meets a
 * barrier): Interlocked.*, Volatile.Write, Unsafe.Write and its block
 * operations, and the memmove/memset internal calls behind Span and Buffer.
 */
static void
sp_jit_emit_callee_address_barriers (MonoCompile *cfg, MonoMethod *cmethod, MonoMethodSignature *fsig, MonoInst **args)
{
	const char *m = cmethod->name;
	if (fsig->hasthis || fsig->param_count < 1)
		return;
	if (sp_jit_is (cmethod, "System.Threading", "Interlocked")) {
		if (sp_jit_first_param_is_byref (fsig) && strcmp (m, "Read") != 0)
			sp_jit_emit_address_barrier (cfg, args [0]);
	} else if (sp_jit_is (cmethod, "System.Threading", "Volatile")) {
		if (sp_jit_first_param_is_byref (fsig) && strcmp (m, "Write") == 0)
			sp_jit_emit_address_barrier (cfg, args [0]);
	} else if (sp_jit_is (cmethod, "System.Runtime.CompilerServices", "Unsafe")) {
		if (strcmp (m, "Write") == 0 || strcmp (m, "WriteUnaligned") == 0)
			sp_jit_emit_address_barrier (cfg, args [0]);
		else if (fsig->param_count == 3 && (g_str_has_prefix (m, "InitBlock") || g_str_has_prefix (m, "CopyBlock")))
			sp_jit_emit_range_barrier (cfg, args [0], args [2]);
	} else if (sp_jit_is (cmethod, "System.Runtime", "RuntimeImports")) {
		if (strcmp (m, "Memmove") == 0 && fsig->param_count == 3)
			sp_jit_emit_range_barrier (cfg, args [0], args [2]);        /* (dest, src, bytes) */
		else if (strcmp (m, "ZeroMemory") == 0 && fsig->param_count == 2)
			sp_jit_emit_range_barrier (cfg, args [0], args [1]);        /* (p, bytes) */
		else if (strcmp (m, "Memmove_wbarrier") == 0)
			sp_jit_emit_range_barrier (cfg, args [0], NULL);            /* (dest, src, elements, type): to the object's end */
	} else if (sp_jit_is (cmethod, "System", "Buffer")) {
		if (strcmp (m, "InternalMemcpy") == 0 && fsig->param_count == 3)
			sp_jit_emit_range_barrier (cfg, args [0], args [2]);        /* (dest, src, bytes) */
	}
}

void
sp_jit_emit_call_barrier (MonoCompile *cfg, MonoMethod *cmethod, MonoMethodSignature *fsig, MonoInst **args)
{
	if (!cmethod || !fsig)
		return;
	/*
	 * A P/Invoke: native code may write into every object it is given (an
	 * array or a blittable class is passed by address), so each gets the
	 * barrier before the call; a managed pointer it is given may be written
	 * through to the end of its object (the length is not known).  In every
	 * method, whatever the barrier mode selects: native code cannot be
	 * annotated, and a call that began during a cycle from a method the mode
	 * leaves alone wrote a long array while the SP task read it piece by
	 * piece, and the torn snapshot was committed (test_native_calls,
	 * `annotating`, about 1 run in 50 under load).
	 */
	if (cmethod->flags & METHOD_ATTRIBUTE_PINVOKE_IMPL) {
		if (!sp_mono_native_call_needs_barrier ())
			return;
		for (int i = 0; i < fsig->param_count + (fsig->hasthis ? 1 : 0); i++) {
			if (args [i]->type == STACK_OBJ)
				sp_jit_emit_guarded_call (cfg, args [i], FALSE);
			if (args [i]->type == STACK_MP && sp_jit_address_may_reach_object (cfg, args [i]))
				sp_jit_emit_range_call (cfg, args [i], NULL);
		}
		return;
	}
	sp_jit_emit_callee_address_barriers (cfg, cmethod, fsig, args);
	guint written = sp_jit_written_array_args (cmethod, fsig);
	for (int i = 0; written && i < fsig->param_count && i < 3; i++)
		if (written & (1u << i))
			sp_jit_emit_store_barrier (cfg, args [i]);   /* only arguments that are objects (sp_jit_emit_store_barrier checks) */
}
