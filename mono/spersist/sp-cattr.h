/*
 * sp-cattr.h: reading a named argument (string, string[], bool, or a
 * number boxed in an object) out of a custom attribute's blob (ECMA-335 II.23.3), such as
 * [SPersistentField (FormerNames = new [] { "Lvl" })], without making the
 * attribute object: class maps are built where nothing managed may be
 * allocated, and the blob comes from an assembly, so it is checked byte by
 * byte like any other input.
 *
 * Blob: prolog 0x0001, the constructor's fixed arguments (our attributes'
 * constructors take none), a u16 count of named arguments, each: 0x53 (field)
 * or 0x54 (property), its type (0x0e string; 0x1d 0x0e string[]; primitives; 0x51 object, whose
 * value then starts with its own type),
 * its name and its value.  Strings are a compressed length and UTF-8 bytes
 * (0xff: null); an array is a u32 count (0xffffffff: null) and its elements.
 */
#ifndef SP_CATTR_H
#define SP_CATTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-error.h"

/*
 * The strings of named argument `name` (string or string[]) of the blob of an
 * attribute whose constructor takes no arguments: *out gets a
 * malloc'd NULL-terminated array (free with sp_cattr_strings_free), NULL when
 * the argument is absent or null.  Returns the count, or -1 for a malformed
 * blob or an argument of another type (err says which).
 */
int sp_cattr_strings (const uint8_t *blob, size_t len, const char *name, char ***out, SpError *err);
void sp_cattr_strings_free (char **strings);

/* Named argument `name` of type bool: 1 and *out, 0 when absent (*out false), -1 (err). */
int sp_cattr_bool (const uint8_t *blob, size_t len, const char *name, bool *out, SpError *err);

/*
 * Named argument `name` of type object (or of a primitive type) holding a
 * number, bool or char, such as [SPersistentField (Default = 5)]: 1, with
 * *kind its SpKind and value its bytes (little-endian, zero-filled to 8); 0
 * when absent; -1 for anything else (a string, an enum: err says so).
 */
int sp_cattr_primitive (const uint8_t *blob, size_t len, const char *name, uint8_t *kind, uint8_t value [8], SpError *err);

#endif
