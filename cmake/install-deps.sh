#!/bin/bash
# install-deps.sh: the Debian 12 packages spmono builds and runs with (as root or via sudo).
# autoconf/automake/libtool/gettext/pkg-config: autoreconf of the patched Mono
# tree (configure.ac uses AM_PO_SUBDIRS and PKG_*); python3: genmdesc.py;
# g++: configure requires a C++ compiler; zlib1g-dev: system zlib;
# xz-utils: the orig tarball; dpkg-dev: apt-get source; mono-devel: mcs and the
# class libraries the runtime loads from /usr/lib/mono; libisal-dev: CRC-32C;
# clang, libclang-rt-14-dev: the libFuzzer target (tests/fuzz; its fuzzer and
# sanitizer runtimes are only recommended by clang, and --no-install-recommends
# leaves them out on a fresh machine); util-linux: taskset, setpriv,
# flock in the tests; libnewtonsoft-json-cil-dev, python3-matplotlib: the
# benchmark suite's JSON contender and its plots (bench/run-suite.sh); help2man:
# the man pages, from the programs' --help; mono-xbuild: the project template
# (examples/template, built by cmake/test-package.sh); nats-server, libnats-dev:
# the replicated store (a 3-node JetStream cluster on loopback for its tests,
# tools/nats-cluster.sh); the rest: core + tests.
set -euo pipefail
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  ca-certificates cmake make gcc g++ pkg-config autoconf automake libtool gettext \
  python3 xz-utils dpkg-dev patch file mono-devel zlib1g-dev \
  libglib2.0-dev libpmem-dev libisal-dev libcmocka-dev clang libclang-rt-14-dev util-linux \
  libnewtonsoft-json-cil-dev python3-matplotlib help2man mono-xbuild time nats-server libnats-dev
