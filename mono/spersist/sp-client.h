/*
 * sp-client.h: what the core needs from the object model, and nothing more.
 *
 * Like SGen's sgen-client.h: the runtime implements these in sp-mono.c (compiled
 * into the same unity translation unit as the core, so calls inline), the unit
 * tests implement them over a fake object model (tests/unit/fake-objects.c).
 * All take object pointers that cannot move while the core holds them.
 */
#ifndef SP_CLIENT_H
#define SP_CLIENT_H

#include <stdint.h>

#include "sp-error.h"
#include "sp-layout.h"

/*
 * The persistent class map entry of obj's class: an [SPersistent] class, a
 * string or a persistable array.  Otherwise NULL, with err saying which type
 * it is and why it cannot be persisted.
 */
SpClass *sp_client_class_of (void *obj, SpError *err);

/* Strings: length in UTF-16 code units, and the units. */
uint32_t sp_client_string_length (void *str);
const uint16_t *sp_client_string_chars (void *str);

/* Arrays (SP_CLASS_ARRAY): element count and the first element. */
uint64_t sp_client_array_length (void *arr);
void *sp_client_array_data (void *arr);

#endif
