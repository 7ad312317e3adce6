/*
 * sp-version.h: spmono's version, the one place it is written.  CMakeLists.txt
 * reads it (the package's version, the man pages'); spdump --version and
 * spmono --help print it.
 */
#ifndef SP_VERSION_H
#define SP_VERSION_H

#define SPMONO_VERSION "0.12.0"

#endif
