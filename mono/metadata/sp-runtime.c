/*
 * sp-runtime.c: the one translation unit through which spmono's sources enter
 * the Mono build (a unity build, as SQLite's amalgamation does).
 *
 * runtime-patches/ adds only this file to mono/metadata/Makefile.am, so adding a
 * source file to spmono never touches the patch series: include it here.
 */
#include <config.h>
