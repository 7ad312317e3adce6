#!/bin/bash
# run-runtime-test.sh SCRIPT
# ctest runs this for every tests/runtime/test_*.sh. SPMONO, SPLIB, MCS, SRCDIR
# and WORKDIR come from the test's ENVIRONMENT property (CMakeLists.txt).
# WORKDIR is emptied first so every run starts from the same state (no stale
# persisted data from a previous run can make a warm-restart test pass).
set -euo pipefail
: "${WORKDIR:?WORKDIR not set}"
rm -rf "$WORKDIR"; mkdir -p "$WORKDIR"
cd "$WORKDIR"
exec bash "$1"
