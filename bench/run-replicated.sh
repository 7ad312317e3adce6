#!/bin/bash
# run-replicated.sh [REPS] [SIZES...]: the replicated store (issue 19,
# docs/REPLICATION.md) against the file store, on the same snapshots
# (bench/RecoveryBench.cs: a ring of N accounts, each period moving money).
#
#   commit   stop-the-world SendPData of the whole state (--sp-delta=off),
#            timed by the program, K periods in one process, the first left
#            out (the buffers' first touch); and of a delta (--sp-delta=on:
#            one account pair changed a period), the commit a 1 kHz loop
#            pays.  Throughput: the snapshot's bytes over the call's time.
#   serve    a standby's time to serve after the primary dies: the primary
#            serves 1 ms periods (deltas on), is killed with SIGKILL, and the
#            standby is timed from its exec to its first durable period
#            (restore, JIT and runtime start included).  "nats-r3, leader
#            node too": the node that leads the store's stream is killed
#            with the primary (its machine died), so the standby's first
#            commit waits for the engine's election.
#
# Stores: file on tmpfs, file on the disk the results are written on (each
# commit fsynced), and NATS JetStream: a 3-node cluster on loopback started
# by tools/nats-cluster.sh, its data on that disk, streams of 3 replicas
# (nats-r3) and of 1 (nats-r1: the protocol without the replication).
# Every run's persisted state is checked whole (money conserved).  Writes
# bench/results/replicated.csv and prints min/median/max.  Without
# nats-server, says so and measures the file stores only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-$here/../build}
reps=${1:-5}; shift $(( $# < 1 ? $# : 1 ))
sizes=("$@"); [ ${#sizes[@]} -gt 0 ] || sizes=(25000 100000 1000000)
periods=${PERIODS:-11}
out=$here/results; mkdir -p "$out"
tmpfs=$(mktemp -d /dev/shm/spreplicated.XXXXXX)
disk=$(mktemp -d "$out/.replicated.XXXXXX")
cluster_sh=$here/../tools/nats-cluster.sh
cluster=$disk/cluster
trap '"$cluster_sh" stop "$cluster" > /dev/null 2>&1 || true; rm -rf "$tmpfs" "$disk"' EXIT
mcs -nologo -optimize+ -warnaserror -r:"$build/lib/SPersistence.dll" -out:"$tmpfs/RecoveryBench.exe" "$here/RecoveryBench.cs"
sp=$build/bin/spmono
csv=$out/replicated.csv
echo "kind,store,n,rep,ns,bytes" > "$csv"

stores=(file-tmpfs file-disk)
if command -v nats-server > /dev/null || [ -x /usr/sbin/nats-server ]; then
	port=$((26000 + $$ % 4000))
	"$cluster_sh" start "$cluster" $port
	servers="127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))"
	stores+=(nats-r3 nats-r1)
else
	echo "(nats-server is not installed: the replicated store is not measured; cmake/install-deps.sh installs it)"
fi

run_id=0
# location STORE: a fresh store of kind STORE (a new stream for NATS); sets loc.
location () {
	run_id=$((run_id + 1))
	case $1 in
	file-tmpfs) rm -rf "$tmpfs/store"; loc=$tmpfs/store ;;
	file-disk) rm -rf "$disk/store"; loc=$disk/store ;;
	nats-r3) loc=nats://$servers/bench$run_id ;;
	nats-r1) loc="nats://$servers/bench$run_id?replicas=1" ;;
	esac
}
spm () { "$sp" --sp-store="$loc" --sp-keep=1 "$@"; }
# primary N: the application serving (run in the background: its pid is the process's).
primary () { exec "$sp" --sp-store="$loc" --sp-keep=1 --sp-delta=on "$tmpfs/RecoveryBench.exe" serve sp "$1" none; }
check () {   # check N: the store holds a whole state of N accounts
	spm --sp-delta=on "$tmpfs/RecoveryBench.exe" check sp "$1" none \
		|| { echo "replicated: $loc, $1 accounts: the persisted state is not whole" >&2; exit 1; }
}

# commit KIND STORE N REP DELTA: K periods' SendPData, the first left out.
commit () {
	location "$2"
	spm --sp-delta=$5 "$tmpfs/RecoveryBench.exe" commit sp "$3" "$periods" | tail -n +2 |
		while read -r _ ns bytes; do echo "$1,$2,$3,$4,$ns,$bytes"; done >> "$csv"
	check "$3"
}

# serve STORE N REP [leader]: the primary killed once it serves; the standby timed to its first durable period.
serve () {
	location "$1"
	local fifo=$tmpfs/out.fifo line
	rm -f "$fifo"; mkfifo "$fifo"
	primary "$2" > "$fifo" &
	local pid=$!
	exec 3< "$fifo"
	read -r -u 3 line; read -r -u 3 line
	[[ $line == served* ]] || { echo "replicated: the primary did not serve: $line" >&2; exit 1; }
	sleep 0.2
	local node=""
	[ "${4:-}" = leader ] && node=$("$cluster_sh" leader "$cluster" "SP_bench$run_id")
	{ kill -9 $pid; [ -z "$node" ] || "$cluster_sh" kill "$cluster" "$node"; wait $pid; } 2>/dev/null || true
	exec 3<&-
	local t0; t0=$(date +%s%N)
	primary "$2" > "$fifo" &
	pid=$!
	exec 3< "$fifo"
	read -r -u 3 line
	[[ $line == "start warm"* ]] || { echo "replicated: the standby did not restore: $line" >&2; exit 1; }
	read -r -u 3 line
	[[ $line == served* ]] || { echo "replicated: the standby did not serve: $line" >&2; exit 1; }
	local t1; t1=$(date +%s%N)
	{ kill -9 $pid; wait $pid; } 2>/dev/null || true
	exec 3<&-
	echo "serve${4:+-$4},$1,$2,$3,$((t1 - t0)),0" >> "$csv"
	[ -z "$node" ] || { "$cluster_sh" restart "$cluster" "$node"; sleep 2; }
	check "$2"
}

for n in "${sizes[@]}"; do
	for rep in $(seq "$reps"); do
		for store in "${stores[@]}"; do
			commit full "$store" "$n" "$rep" off
			commit delta "$store" "$n" "$rep" on
			serve "$store" "$n" "$rep"
		done
		[[ " ${stores[*]} " == *" nats-r3 "* ]] && serve nats-r3 "$n" "$rep" leader
	done
done

python3 - "$csv" <<'PY'
import csv, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for r in csv.DictReader(open(sys.argv[1])):
    runs[(r["kind"], int(r["n"]), r["store"])].append((int(r["ns"]) / 1e6, int(r["bytes"])))
def spread(v, fmt="{:.2f}"):
    return " / ".join(fmt.format(x) for x in (min(v), statistics.median(v), max(v)))
stores = ["file-tmpfs", "file-disk", "nats-r1", "nats-r3"]
def table(kind, title, columns):
    keys = sorted(k for k in runs if k[0] == kind)
    if not keys:
        return
    print(title)
    print("| objects | store | ms |" + "".join(f" {c} |" for c in columns))
    print("|---:|---|---:|" + "---:|" * len(columns))
    for k in sorted(keys, key=lambda k: (k[1], stores.index(k[2]))):
        rs = runs[k]
        line = f"| {k[1]} | {k[2]} | {spread([r[0] for r in rs])} |"
        if "MB/s" in columns:
            line += f" {spread([r[1] / r[0] / 1e3 for r in rs], '{:.0f}')} |"
        if "bytes" in columns:
            line += f" {statistics.median([r[1] for r in rs]):.0f} |"
        print(line)
    print()
table("full", "Commit of a full snapshot (stop-the-world SendPData), ms and MB/s (min / median / max)", ["MB/s", "bytes"])
table("delta", "Commit of a delta (one account pair changed), ms (min / median / max)", ["bytes"])
table("serve", "Standby's time to serve after the primary's SIGKILL, exec to first durable period, ms", [])
table("serve-leader", "The same, the stream's leader node killed with the primary", [])
PY
