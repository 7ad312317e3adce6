#!/bin/bash
# fetch-mono.sh SUMS DLDIR STAMP
# Downloads the pinned Debian source package of Mono into DLDIR with apt itself
# (so no mirror address lives in the project), verifies the sha256 of all files
# listed in SUMS (the pin: cmake/mono-source.sha256) and touches STAMP. apt runs
# with private state dirs under DLDIR/apt: the machine's apt configuration and
# lists are never modified.
# Idempotent: files already present are not fetched again, but always verified.
set -euo pipefail
SUMS_FILE=$1 DL=$2 STAMP=$3
VERSION=6.8.0.105+dfsg-3.3+deb12u1   # must match the file names in SUMS
SUMS=$(cat "$SUMS_FILE")
ETC=${SPMONO_APT_ETC:-/etc/apt}    # overridable only to test both source formats

mkdir -p "$DL"
missing=0
while read -r _ f; do [ -f "$DL/$f" ] || missing=1; done <<<"$SUMS"

if [ $missing = 1 ]; then
  A=$DL/apt
  rm -rf "$A/etc"; mkdir -p "$A/lists/partial" "$A/cache/archives/partial" "$A/etc"
  # deb-src entries derived from the machine's own Debian entries.
  # deb822 files: one stanza per paragraph; keep enabled ones whose URIs mention debian.
  for f in "$ETC"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
         { keep = 0; out = ""
           for (i = 1; i <= NF; i++) {
             l = $i
             if (l ~ /^URIs:.*debian/) keep = 1
             if (l ~ /^Enabled:[[:space:]]*no/) { keep = 0; break }
             if (l ~ /^Types:/) l = "Types: deb-src"
             out = out l "\n" }
           if (keep) print out }' \
      "$f" > "$A/etc/$(basename "$f")"
  done
  # one-line files: `deb [opts] uri suite comp...` -> `deb-src ...`.
  for f in "$ETC"/sources.list "$ETC"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n -E '/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[a-z+]+:[^[:space:]]*debian/ s/^[[:space:]]*deb[[:space:]]/deb-src /p' \
      "$f" > "$A/etc/src-$(basename "$f").list"
  done
  if ! cat "$A"/etc/* 2>/dev/null | grep -q deb-src; then
    echo "fetch-mono: no Debian apt source found on this machine to derive deb-src from" >&2
    exit 1
  fi
  OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$A/etc"
        -o "Dir::State::Lists=$A/lists" -o "Dir::Cache=$A/cache" -o Debug::NoLocking=1)
  apt-get "${OPTS[@]}" -q update
  # As root, apt warns that it downloads unsandboxed (DL is not _apt's): harmless.
  (cd "$DL" && apt-get "${OPTS[@]}" -q source --download-only "mono=$VERSION")
fi

# Verify every file; never delete or re-fetch a bad one silently.
if ! (cd "$DL" && sha256sum --quiet -c - <<<"$SUMS"); then
  echo "fetch-mono: ERROR: sha256 mismatch in $DL (the FAILED file above; pinned sums: $SUMS_FILE)." >&2
  echo "fetch-mono: refusing to build from an unverified Mono source; delete $DL to fetch again." >&2
  exit 1
fi
touch "$STAMP"
