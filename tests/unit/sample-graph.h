/*
 * sample-graph.h: the fake object graph the round-trip and hostile-input tests
 * share: every primitive kind (with NaN, -0.0, extremes), strings (empty,
 * Latin-1, UTF-16 with surrogates, long), arrays of every primitive kind,
 * jagged arrays, arrays of structs with padding, null references, shared
 * objects, cycles, two roots naming the same object, a null root, and a
 * non-persistent slot pointing at something that cannot be persisted.
 */
#ifndef SAMPLE_GRAPH_H
#define SAMPLE_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "sp-buf.h"

#define SAMPLE_MAX_ROOTS 8

typedef struct SampleGraph {
	size_t nroots;
	uint32_t ids [SAMPLE_MAX_ROOTS];
	void *roots [SAMPLE_MAX_ROOTS];
	/* Named objects, for the tests' spot checks (updated by nobody: don't move the graph when using them). */
	void *a, *b, *c, *d;        /* App.Node: a<->b cycle, a.other = a, c shared by b and d */
	void *prims;                /* App.Prims: one field of every kind */
	void *bag;                  /* App.Bag: an array of every primitive kind */
	void *jagged;               /* System.Int32[][]: { x, [], null, x } */
	void *points;               /* App.Point[]: structs with padding */
	void *utf16;                /* "é😀Ω..." with surrogates and units > 0xFF */
} SampleGraph;

/* Build the graph (after fake_reset); its classes are registered in the fake model. */
void sample_graph_build (SampleGraph *g);
/* Serialize it into out (steps of `step` objects); the test fails on error. */
void sample_graph_serialize (SampleGraph *g, size_t step, SpBuf *out);

/* Root ids of the sample (the same object is root 1 and root 9; root 7 is null). */
#define SAMPLE_ROOT_A     1
#define SAMPLE_ROOT_D     2
#define SAMPLE_ROOT_PRIMS 3
#define SAMPLE_ROOT_BAG   5
#define SAMPLE_ROOT_NULL  7
#define SAMPLE_ROOT_A2    9

/* The element layout of App.Point[] (elem_size 32 > the 8+8+2+1 bytes of leaves). */
#define SAMPLE_POINT_SIZE 32
#define SAMPLE_POINT_X    0
#define SAMPLE_POINT_TAG  8
#define SAMPLE_POINT_K    16
#define SAMPLE_POINT_FLAG 20

#endif
