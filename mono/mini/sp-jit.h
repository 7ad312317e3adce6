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
 * so that with no cycle running a guarded store costs a load and a branch.
 * In other methods, and in stop-the-world mode, nothing is emitted.
 */
#ifndef SP_JIT_H
#define SP_JIT_H

#include "mini.h"

void sp_jit_emit_store_barrier (MonoCompile *cfg, MonoInst *obj);
/*
 * Before a call of a class-library method that writes into an array it is
 * given (Array.Copy, Array.ConstrainedCopy, Array.Clear, Array.Reverse,
 * Array.Sort, Buffer.BlockCopy): the barrier on that array.  args: the
 * call's arguments.
 */
void sp_jit_emit_call_barrier (MonoCompile *cfg, MonoMethod *cmethod, MonoMethodSignature *fsig, MonoInst **args);
/* Before mini_init (options parsed, corlib not loaded): JIT settings the barrier mode needs. */
void sp_jit_before_init (void);

#endif
