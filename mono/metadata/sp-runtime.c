/*
 * sp-runtime.c: the one translation unit through which spmono's sources enter
 * the Mono build (a unity build, as SQLite's amalgamation does).
 *
 * runtime-patches/ adds only this file to mono/metadata/Makefile.am, so adding a
 * source file to spmono never touches the patch series: include it here.  Being
 * one unit also lets the compiler inline the client calls (sp_client_*) into the
 * core's loops, as SGen's client interface is meant to be used.
 */
#include <config.h>

/* The client's per-object calls inline into the core's loops (sp-client.h). */
#define SP_CLIENT_HOT inline __attribute__ ((always_inline))

/* The runtime links libpmem and libnats (cmake/prepare-mono.sh: LIBS): the pmem and NATS stores are in. */
#define SPMONO_HAVE_PMEM 1
#define SPMONO_HAVE_NATS 1

#include "../spersist/sp-error.c"
#include "../spersist/sp-buf.c"
#include "../spersist/sp-crc32c.c"
#include "../spersist/sp-lidmap.c"
#include "../spersist/sp-queue.c"
#include "../spersist/sp-storelog.c"
#include "../spersist/sp-wset.c"
#include "../spersist/sp-reserve.c"
#include "../spersist/sp-kids.c"
#include "../spersist/sp-cards.c"
#include "../spersist/sp-serialize.c"
/* The decoder's OBJECT sink inlines into the validating walk (sp-walk.h). */
static int sp_decode_object (void *ctx, uint32_t lid, uint32_t class_id, const uint8_t *values, SpError *err);
static inline __attribute__ ((always_inline)) int sp_decode_object_refs (void *ctx, uint32_t lid, uint32_t class_id,
									  const uint8_t *values, const uint32_t *refs, SpError *err);
#define SP_WALK_DECODER_OBJECT sp_decode_object
#define SP_WALK_DECODER_OBJECT_REFS sp_decode_object_refs
#include "../spersist/sp-snapshot.c"
#include "../spersist/sp-cattr.c"
#include "../spersist/sp-evolve.c"
/* The restorer's per-object calls (sp-restore.c) inline into the decoder's loops (sp-snapshot.h). */
#include "../spersist/sp-snapshot.h"
static inline __attribute__ ((always_inline)) void *sp_mono_restore_create (void *ctx, uint32_t lid, const SpSnapClass *sc,
									      uint64_t length, SpError *err);
static inline __attribute__ ((always_inline)) void *sp_mono_restore_base (void *ctx, uint32_t lid, uint8_t kind);
static inline __attribute__ ((always_inline)) int sp_mono_store_ref (void *ctx, void *slot, const SpField *field, uint32_t lid,
								    SpError *err);
static inline __attribute__ ((always_inline)) int sp_mono_restore_link (void *ctx, uint32_t owner, uint8_t kind, size_t offset,
									   const SpField *field, void *early, uint32_t lid, SpError *err);
#define SP_RESTORER_CREATE sp_mono_restore_create
#define SP_RESTORER_BASE sp_mono_restore_base
#define SP_RESTORER_STORE_REF sp_mono_store_ref
#define SP_RESTORER_LINK sp_mono_restore_link
#include "../spersist/sp-decode.c"
#include "../spersist/sp-options.c"
#include "../spersist/sp-store.c"
#include "../spersist/sp-store-file.c"
#include "../spersist/sp-store-pmem.c"
#include "../spersist/sp-store-null.c"
#include "../spersist/sp-store-nats.c"
#include "../spersist/sp-stream.c"
#include "../spersist/sp-model.c"
#include "../spersist/sp-chain.c"
#include "../spersist/sp-fold.c"

/* The client (sp-mono-state.h says which file does what); sp-mono.c, the entry points, last. */
#include "sp-mono-state.h"
#include "sp-trace.c"
#include "sp-cpu-latency.c"
#include "sp-heap.c"
#include "sp-classmap.c"
#include "sp-identity.c"
#include "sp-renames.c"
#include "sp-upgrade.c"
#include "sp-unknown.c"
#include "sp-restore.c"
#include "sp-unseen.c"
#include "sp-cycle.c"
#include "sp-fold-task.c"
#include "sp-delta.c"
#include "sp-mono.c"
