/*
 * sp-cattr.h: reading a string or string[] named argument out of a custom
 * attribute's blob (ECMA-335 II.23.3), such as
 * [SPersistentField (FormerNames = new [] { "Lvl" })], without making the
 * attribute object: class maps are built where nothing managed may be
 * allocated, and the blob comes from an assembly, so it is checked byte by
 * byte like any other input.
 *
 * Blob: prolog 0x0001, the constructor's fixed arguments (our attributes'
 * constructors take none), a u16 count of named arguments, each: 0x53 (field)
 * or 0x54 (property), its type (0x0e string; 0x1d 0x0e string[]; primitives),
 * its name and its value.  Strings are a compressed length and UTF-8 bytes
 * (0xff: null); an array is a u32 count (0xffffffff: null) and its elements.
 */
#ifndef SP_CATTR_H
#define SP_CATTR_H

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

#endif
