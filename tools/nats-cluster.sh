#!/bin/bash
# nats-cluster.sh: a 3-node NATS JetStream cluster on loopback, from Debian's
# nats-server package (cmake/install-deps.sh installs it), for the replicated
# store's demo, tests and benchmarks (docs/REPLICATION.md).
#
#   nats-cluster.sh start DIR [PORT]   nodes n1 n2 n3: clients on PORT, PORT+1,
#                                      PORT+2 (default 14222), routes on
#                                      PORT+100..102; data, configs, logs and
#                                      pids under DIR; returns once JetStream
#                                      has a meta leader (at most 30 s)
#   nats-cluster.sh stop DIR           every node of DIR, killed and waited for
#   nats-cluster.sh kill DIR NODE      node NODE (1-3) killed with SIGKILL
#   nats-cluster.sh restart DIR NODE   node NODE started again (its data kept)
#   nats-cluster.sh url DIR            the clients' URLs, comma-separated
#   nats-cluster.sh current DIR STREAM exit 0 once STREAM's leader reports
#                                      every replica current (monitoring
#                                      ports PORT+200..202, /jsz), else 1
#   nats-cluster.sh leader DIR STREAM  the node (1-3) that leads STREAM: the
#                                      running node that last logged its
#                                      election (exit 1 if none did)
set -euo pipefail
cmd=${1:?usage: nats-cluster.sh start|stop|kill|restart|url|leader DIR [PORT|NODE|STREAM]}
dir=${2:?usage: nats-cluster.sh $cmd DIR}
server=$(command -v nats-server || echo /usr/sbin/nats-server)

node_conf () {   # node_conf N PORT: node N's configuration
	local n=$1 port=$2 routes="" i
	for i in 1 2 3; do
		[ "$i" = "$n" ] || routes+="    nats-route://127.0.0.1:$((port + 99 + i))"$'\n'
	done
	cat <<EOF
server_name: n$n
listen: 127.0.0.1:$((port + n - 1))
http: 127.0.0.1:$((port + 199 + n))
jetstream {
  store_dir: "$dir/n$n/data"
}
cluster {
  name: spmono
  listen: 127.0.0.1:$((port + 99 + n))
  routes: [
$routes  ]
}
EOF
}

start_node () {   # start_node N: node N in the background, its pid in DIR/nN/pid
	local n=$1
	"$server" -c "$dir/n$n/nats.conf" >> "$dir/n$n/log" 2>&1 &
	echo $! > "$dir/n$n/pid"
}

case $cmd in
start)
	port=${3:-14222}
	[ -x "$server" ] || { echo "nats-cluster.sh: nats-server is not installed (cmake/install-deps.sh installs it)" >&2; exit 1; }
	mkdir -p "$dir"
	echo "$port" > "$dir/port"
	for n in 1 2 3; do
		mkdir -p "$dir/n$n/data"
		node_conf $n "$port" > "$dir/n$n/nats.conf"
		: > "$dir/n$n/log"   # a restart appends to it: the leader command reads its history
		start_node $n
	done
	# Ready once a node's log says JetStream elected a meta leader (the cluster formed).
	for _ in $(seq 300); do
		if grep -qh "JetStream cluster new metadata leader\|Self is new JetStream cluster metadata leader" "$dir"/n*/log 2>/dev/null; then
			exit 0
		fi
		sleep 0.1
	done
	echo "nats-cluster.sh: the cluster in $dir formed no JetStream meta leader in 30 s:" >&2
	tail -5 "$dir"/n*/log >&2
	exit 1
	;;
stop)
	for n in 1 2 3; do
		[ -f "$dir/n$n/pid" ] || continue
		pid=$(cat "$dir/n$n/pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$dir/n$n/pid"
	done
	;;
kill)
	n=${3:?usage: nats-cluster.sh kill DIR NODE}
	kill -9 "$(cat "$dir/n$n/pid")" 2>/dev/null || true
	;;
restart)
	n=${3:?usage: nats-cluster.sh restart DIR NODE}
	start_node "$n"
	;;
leader)
	stream=${3:?usage: nats-cluster.sh leader DIR STREAM}
	# Each node logs "[pid] DATE TIME [INF] JetStream cluster new stream leader for
	# '$G > STREAM'" when it is elected; the newest such line of a running node names the leader.
	newest="" leader=""
	for n in 1 2 3; do
		[ -f "$dir/n$n/pid" ] && kill -0 "$(cat "$dir/n$n/pid")" 2>/dev/null || continue
		line=$(grep -F "new stream leader for '\$G > $stream'" "$dir/n$n/log" | tail -1) || continue
		stamp=$(echo "$line" | cut -d' ' -f2,3)
		if [[ "$stamp" > "$newest" ]]; then newest=$stamp leader=$n; fi
	done
	[ -n "$leader" ] || { echo "nats-cluster.sh: no running node of $dir leads $stream" >&2; exit 1; }
	echo "$leader"
	;;
current)
	stream=${3:?usage: nats-cluster.sh current DIR STREAM}
	port=$(cat "$dir/port")
	python3 - "$port" "$stream" <<'PY'
import json, sys, urllib.request
port, stream = int(sys.argv[1]), sys.argv[2]
for n in (1, 2, 3):
    try:
        url = "http://127.0.0.1:%d/jsz?accounts=true&streams=true" % (port + 199 + n)
        jsz = json.load(urllib.request.urlopen(url, timeout=1))
    except Exception:
        continue
    for account in jsz.get("account_details") or []:
        for s in account.get("stream_detail") or []:
            cluster = s.get("cluster") or {}
            if s.get("name") == stream and cluster.get("leader") == "n%d" % n:   # nN: node_conf's server_name
                replicas = cluster.get("replicas") or []
                sys.exit(0 if replicas and all(r.get("current") and not r.get("lag") for r in replicas) else 1)
sys.exit(1)
PY
	;;
url)
	port=$(cat "$dir/port")
	echo "nats://127.0.0.1:$port,nats://127.0.0.1:$((port + 1)),nats://127.0.0.1:$((port + 2))"
	;;
*)
	echo "usage: nats-cluster.sh start|stop|kill|restart|url|leader|current DIR [PORT|NODE|STREAM]" >&2
	exit 2
	;;
esac
