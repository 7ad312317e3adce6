/*
 * sp-jit.h: the JIT's part of spmono's store barrier (paper section 4).
 *
 * method-to-ir.c calls sp_jit_emit_store_barrier just before it emits the
 * store of a stfld into an object or of any stelem form.  In the methods the
 * barrier mode selects (sp_mono_method_needs_barrier), that emits
 *
 *     if (sp_barrier_active)            -- an inline load and branch
 *         sp_barrier_store (obj);       -- a JIT icall: the slow path
 *
 * so that with no cycle running a guarded store costs a load and a branch
 * (and, in a loop storing into an object the loop does not change, nothing:
 * sp_jit_amd64_before_block moves that barrier out of the loop).  In other
 * methods, and in stop-the-world mode, nothing is emitted.
 *
 * On amd64 the whole test is one IR instruction, OP_SP_BARRIER, whose slow
 * path calls sp_barrier_store through a thunk that saves every register the
 * C ABI lets a callee clobber: the instruction clobbers nothing and does not
 * end its basic block, so the register allocator keeps values in registers
 * across it (the portable version above splits the block, and values live
 * across the split go through the stack).  Its code is
 *
 *     cmpl   $0, sp_barrier_active       -- a 32-bit absolute address
 *     jne    2f                          -- not taken while no cycle runs
 *  1: ...the store...
 *
 *  2: movabs $thunk_for_obj_reg, %r11    -- after the method's code (with
 *     call   *%r11                       -- Mono's exception throws); r11:
 *     jmp    1b                          -- the backend's scratch register
 *
 * Out of line, the fast path is one compare and a branch not taken: inline,
 * the branch around the call was taken on every guarded store, and a core
 * starts few taken branches a cycle, so a tight store loop (whose back edge
 * is one already) ran at up to two thirds of its speed.
 *
 * The flag's page is mapped in the lowest 2 GB (sp_barrier_flag_init), so
 * the test is one instruction; should that mapping fail, the address is
 * loaded into r11 first (movabs).  On the machine of docs/INCREMENTAL.md the
 * one-instruction form cut marking's cost on store loops from +19% to +3%.
 */
#ifndef SP_JIT_H
#define SP_JIT_H

#include "mini.h"

void sp_jit_emit_store_barrier (MonoCompile *cfg, MonoInst *obj);
/*
 * A stelem.ref of an object (not the constant NULL), with the array's type
 * check, in a guarded method: the check, then the barrier, then the store
 * with the GC's write barrier; the store instruction, or NULL when the method
 * is not guarded (mini_emit_array_store then calls Mono's stelemref wrapper,
 * as it does without spmono).  Not the wrapper in a guarded method: it
 * checks and stores, and a safepoint at its entry or in its check came
 * between the caller's barrier and the store, so a cycle starting there
 * missed the store (under annotating and marking-v2, whose wrappers have no
 * barrier of their own; tests/runtime/Loops.cs "refs" tore 7 of 8 snapshots).
 */
MonoInst *sp_jit_emit_checked_ref_store (MonoCompile *cfg, MonoClass *klass, MonoInst **sp);
/*
 * Before a call of a method that writes into an object it is given: the
 * barrier on that object.  Class-library methods (Array.Copy, ConstrainedCopy,
 * Clear, Reverse, Sort, Fill; Buffer.BlockCopy; Marshal.Copy into an array,
 * Marshal.PtrToStructure into an object; MemoryExtensions.AsSpan/AsMemory,
 * whose span may be written later) and every P/Invoke (native code may write
 * into any object passed by address).  args: the call's arguments.
 */
void sp_jit_emit_call_barrier (MonoCompile *cfg, MonoMethod *cmethod, MonoMethodSignature *fsig, MonoInst **args);
/*
 * Before a store through an address (stind, stobj, initobj, cpobj, stfld
 * into a struct by reference; Interlocked, Volatile.Write and Unsafe.Write
 * through sp_jit_emit_call_barrier): the address barrier,
 *
 *     if (sp_barrier_active)
 *         sp_barrier_store_addr (addr);  -- logs the store unless it is harmless
 *
 * (OP_SP_BARRIER with inst_c0 set on amd64).  Nothing for a local's address.
 * The object barrier above covers every pointer made where the JIT sees the
 * object (ldflda, ldelema, AsSpan); this one catches stores through pointers
 * made otherwise or before the cycle started, so that the cycle can refuse a
 * record they may have changed (metadata/sp-cycle.c, spersist/sp-storelog.h).
 */
void sp_jit_emit_address_barrier (MonoCompile *cfg, MonoInst *addr);
/* The same for a block of len bytes at addr (cpblk, initblk, memmove); len NULL: to the end of the object. */
void sp_jit_emit_range_barrier (MonoCompile *cfg, MonoInst *addr, MonoInst *len);
#ifdef TARGET_AMD64
/* OP_SP_BARRIER's code, for mono_arch_output_basic_block (at most 21 bytes: cpu-amd64.md says 32). */
guint8 *sp_jit_amd64_emit_barrier (MonoCompile *cfg, guint8 *code, int reg, gboolean address);
/* The barriers' out-of-line slow paths, after the method's code: for mono_arch_emit_exceptions. */
void sp_jit_amd64_emit_barrier_stubs (MonoCompile *cfg);
/*
 * Before a basic block's code is emitted (registers allocated), and before
 * mono_arch_output_basic_block estimates its branches' distances:
 *
 * - drop every object barrier on a register that holds an object a barrier
 *   earlier in the block handled, when nothing in between can reach a
 *   safepoint (a call, a safepoint poll, a class initialization, an address
 *   barrier) or put something else in that register.  s.A = 1; s.B = 2;
 *   s.C++ keeps one barrier.
 *
 * - at the method's first block, move the barriers on loop-invariant objects
 *   out of loops.  A loop here is a strongly connected component of the
 *   control-flow graph (a nest of loops is one); a barrier in it on a
 *   callee-saved register (a variable the global allocator put there) that
 *   no instruction of the loop writes is dropped, and the loop instead gets
 *   barriers on that register at the end of each block entering it, after
 *   each of its calls (and other instructions that may reach a safepoint),
 *   and on each of its safepoint polls' slow path, after the poll returns
 *   (sp_jit_amd64_emit_poll_barriers).  for (i...) a [i] = x; then costs
 *   what it costs without barriers: the poll Mono emits anyway.
 *
 * Both are sound because a cycle starts, and the GC moves objects, only
 * with every thread at a safepoint (--sp-mode=incremental refuses
 * preemptive suspension), and a thread running managed code reaches one
 * only in a call or in a poll's slow path.  So the object a barrier handled
 * stays handled, at the same address, until the thread next reaches one,
 * and after each the barrier runs again.  (A barrier that waits for
 * sp_lock waits in GC-safe mode, where the world can stop: a cycle does not
 * start while one waits, sp_cycle_start_stopped.)  Loops with exception
 * handlers, finally calls or debugger sequence points are left alone, as is
 * a loop entered by a block whose end is not a branch after its compare, a
 * plain branch or a fall-through.  SPMONO_JIT_TRACE=1 prints each method
 * whose loops lost barriers.
 */
void sp_jit_amd64_before_block (MonoCompile *cfg, MonoBasicBlock *bb);
/* In OP_GC_SAFE_POINT's slow path, after the poll's call: the barriers the loop's invariant objects need (inst_c1, a register mask). */
guint8 *sp_jit_amd64_emit_poll_barriers (MonoCompile *cfg, guint8 *code, MonoInst *poll);
#endif
/* Before mini_init (options parsed, corlib not loaded): JIT settings the barrier mode needs. */
void sp_jit_before_init (void);

#endif
