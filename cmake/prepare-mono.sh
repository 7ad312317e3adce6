#!/bin/bash
# prepare-mono.sh DLDIR SRCDIR PATCHDIR STAMP
# Unpacks the verified orig tarball into a fresh SRCDIR, applies the patch
# series, regenerates the autotools files and configures the runtime build.
# Always starts from pristine source, so a changed patch applies cleanly.
set -euo pipefail
DL=$1 SRC=$2 PATCHES=$3 STAMP=$4

rm -f "$STAMP"
rm -rf "$SRC"; mkdir -p "$SRC"
echo "prepare-mono: unpacking Mono source into $SRC"
tar xf "$DL/mono_6.8.0.105+dfsg.orig.tar.xz" -C "$SRC" --strip-components=1

# Series order; '#' starts a comment. A listed patch that is missing or does
# not apply stops the build (patch exits non-zero; --forward refuses reversal).
sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$PATCHES/series" | while read -r p; do
  [ -n "$p" ] || continue
  [ -f "$PATCHES/$p" ] || { echo "prepare-mono: series lists missing patch $p" >&2; exit 1; }
  echo "prepare-mono: applying $p"
  patch -d "$SRC" -p1 --forward --batch --no-backup-if-mismatch < "$PATCHES/$p"
done

cd "$SRC"
# mono/mini/Makefile.am is derived from Makefile.am.in (autogen.sh does that
# with cat); make has a rule to regenerate it when .am.in is newer. Patches touch
# both, so make .am the newer one to keep make from regenerating it later.
touch mono/mini/Makefile.am
autoreconf -fi
# --prefix=/usr: the runtime then finds Debian's class libraries
# (/usr/lib/mono/4.5 from mono-devel) and /etc/mono/config by itself.
# LIBS: what spmono's sources (sp-runtime.c) call into: ISA-L's CRC-32C,
# for the persistent-memory store libpmem, for the replicated store libnats.
LIBS="-lisal -lpmem -lnats" ./configure --prefix=/usr --sysconfdir=/etc --disable-mcs-build --disable-btls \
  --with-ikvm-native=no --disable-boehm --enable-llvm=no --disable-nls --with-mcs-docs=no
touch "$STAMP"
