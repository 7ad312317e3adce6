#!/bin/bash
# run-java.sh NODES REPS: the Java peers of bench/TreeBench.cs (issue 20):
# Apache Fory (reference tracking, class registered) and Kryo (references
# on) serialize and restore the same tree, in one JVM, to memory
# (bench/java/src/main/java/spbench/TreePeers.java).  Prints TreeBench's CSV
# rows (Fory/Kryo, serialize/restore) on stdout; run-tree.sh appends them to
# its own, so summarize.py prints SP beside them.
#
# Needs a JDK 17 and Maven (Debian: default-jdk-headless, maven; not installed
# by cmake/install-deps.sh, as the runtime does not need them), and Maven
# Central the first time (the jar is built once, into bench/java/target).
# Without them it prints one line on stderr saying why and no rows, and
# exits 0: the suite goes on without the peers.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?NODES}; reps=${2:?REPS}
java=${JAVA:-java}; mvn=${MVN:-mvn}
skip () { echo "run-java: skipped: $*" >&2; exit 0; }
command -v "$java" > /dev/null || skip "no java (apt-get install default-jdk-headless)"
jar=$here/java/target/tree-peers.jar
src=$here/java/src/main/java/spbench/TreePeers.java
# One scratch directory for the build's log and the JVM's stderr, always removed.
scratch=$(mktemp -d); trap 'rm -rf "$scratch"' EXIT
if [ ! -f "$jar" ] || [ "$src" -nt "$jar" ] || [ "$here/java/pom.xml" -nt "$jar" ]; then
	# Maven is needed only to build the jar; a built one runs without it.
	command -v "$mvn" > /dev/null || skip "no mvn to build the peers' jar (apt-get install maven)"
	(cd "$here/java" && "$mvn" -q -B package > "$scratch/build.log" 2>&1) ||
		skip "the Maven build failed (no network to Maven Central?): $(grep -m1 '\[ERROR\]' "$scratch/build.log" || tail -1 "$scratch/build.log")"
fi
# Fory logs its own progress on stderr: keep it out of the way unless the run fails.
"$java" -jar "$jar" "$n" "$reps" 2> "$scratch/java.err" || { cat "$scratch/java.err" >&2; echo "run-java: the Java peers failed" >&2; exit 1; }
