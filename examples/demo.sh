#!/bin/bash
# demo.sh [BUILD]: the control loop of examples/ControlLoop.cs, killed with
# kill -9 in the middle of its run and started again: it resumes warm from the
# last period it persisted.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
demo=$build/demo; mkdir -p "$demo"; rm -rf "$demo/ControlLoop.spstore"
mcs -nologo -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$demo/ControlLoop.exe" "$here/ControlLoop.cs"

echo "== run 1: 1000 periods of 20 ms; killed with SIGKILL after about 1.5 s"
"$build/bin/spmono" "$demo/ControlLoop.exe" 1000 20 > "$demo/run1.log" &
pid=$!
sleep 1.5
kill -9 $pid; wait $pid 2>/dev/null || true
head -3 "$demo/run1.log"; echo "   ..."; tail -2 "$demo/run1.log"
echo "== killed (kill -9 $pid). Store: $(ls "$demo/ControlLoop.spstore" | tr '\n' ' ')"
echo "== run 2: the same command, 5 more periods"
"$build/bin/spmono" "$demo/ControlLoop.exe" 5 20
