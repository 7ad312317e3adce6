/*
 * craft-chain.h: snapshots written by hand, for tests of the format's rules:
 * a full snapshot or a delta on another (part_begin), records, then the
 * trailer with its checksum (part_finish).  Class "App.Node" { value: int,
 * next: App.Node } and "System.Int32[]" are what the records below write.
 */
#ifndef CRAFT_CHAIN_H
#define CRAFT_CHAIN_H

#include "sp-buf.h"
#include "sp-format.h"

typedef struct Part {
	SpBuf b;
	SpSnapHeader h;
	uint32_t crc;          /* after part_finish */
	uint32_t nobjects;
} Part;

/* Snapshot `sequence`: full when prev is NULL, else a delta on prev of the chain that starts at base. */
void part_begin (Part *p, uint64_t sequence, const Part *base, const Part *prev);
void part_finish (Part *p, uint32_t nclasses, uint32_t nobjects, uint32_t nroots);

void put_class_node (SpBuf *b, uint64_t id);
void put_class_ints (SpBuf *b, uint64_t id);
void put_node (SpBuf *b, uint64_t lid, uint64_t class_id, int32_t value, uint64_t next);
/* A piece of int values: count, then each. */
void put_ints (SpBuf *b, const int32_t *v, uint64_t n);
void put_patch (SpBuf *b, uint64_t lid, uint64_t class_id, uint64_t start, const int32_t *v, uint64_t n);
void put_root (SpBuf *b, uint64_t id, uint64_t lid);

/* Register App.Node and System.Int32[] in the fake object model (once per fake_reset), for restoring what these write. */
void craft_register_classes (void);

#endif
