#!/usr/bin/env bash
# Mayfly over PostgreSQL, measured with the Go SDK load tool
# (cmd/mayfly-load), in two parts, each alternating its targets round by
# round and summarised as the median of each round's ratio:
#
# 1. one gateway over PostgreSQL against one over Pebble (durable data
#    directory): create, point read, query by id, range in one partition;
# 2. one, two and three gateways over one PostgreSQL database sharing the
#    same load (the clients spread over the gateways), against one.
#
# Besides throughput, each phase reports the gateways' CPU per operation,
# PostgreSQL's (every process named postgres), and the round trips to
# PostgreSQL per operation the gateways counted (background work
# included). A throwaway cluster is started under a temp dir and removed.
#
# Tunables (environment): BENCH_DURATION (per phase, default 5s),
# BENCH_CONCURRENCY (default 16), BENCH_ITEMS (default 10000),
# BENCH_PARTITIONS (default 64), BENCH_ROUNDS (default 3), BENCH_PHASES
# (default create,read,query,range), BENCH_PARTS (default 1,2), BENCH_RANGES
# (partition key ranges of the containers part 2 creates, each with its own
# sequence of LSNs; default 1).
# Results go to bin/bench-postgres/.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh
lock_checkout
duration=${BENCH_DURATION:-5s}
concurrency=${BENCH_CONCURRENCY:-16}
items=${BENCH_ITEMS:-10000}
partitions=${BENCH_PARTITIONS:-64}
rounds=${BENCH_ROUNDS:-3}
phases=${BENCH_PHASES:-create,read,query,range}
parts=${BENCH_PARTS:-1,2}
ranges=${BENCH_RANGES:-1}
ports=(8081 8082 8083 8084)
out=bin/bench-postgres

for p in "${ports[@]}"; do require_free_port "$p"; done
rm -rf "$out"
mkdir -p "$out"
tmp=$(mktemp -d)
cleanup() { stop_servers; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

say "build"
go build -o bin/ ./cmd/mayfly ./cmd/mayfly-load

say "start PostgreSQL"
pg_start "$(mktemp -d)"
echo "PostgreSQL at $pg_url"

load=(./bin/mayfly-load -concurrency "$concurrency" -duration "$duration" -items "$items" -partitions "$partitions"
	-phases "$phases" -db-process postgres)

# gateway I ARGS...: start gateway I (port ports[I], metrics on 947I) and
# wait for it; its pid is left in gw_pid[I].
gw_pid=()
gateway() {
	local i=$1
	shift
	start_server "$out/gateway-$i.log" ./bin/mayfly --addr "localhost:${ports[$i]}" --metrics-addr "127.0.0.1:947$i" \
		--log-level warn "$@"
	gw_pid[$i]=$started_pid
	wait_ready "https://localhost:${ports[$i]}/" "$started_pid" "$out/gateway-$i.log" "$out/gateway-$i.pem"
}

if [[ ",$parts," == *",1,"* ]]; then
	say "part 1: one gateway over PostgreSQL against one over Pebble"
	gateway 0 --data-dir "$tmp/pebble"
	gateway 1 --data-dir "$tmp/gw1" --postgres "$pg_url"
	files=()
	for round in $(seq 1 "$rounds"); do
		say "round ${round}: Pebble"
		"${load[@]}" -endpoint "https://localhost:${ports[0]}/" -ca-file "$out/gateway-0.pem" -label pebble \
			-server-pid "${gw_pid[0]}" -out "$out/pebble-${round}.json"
		say "round ${round}: PostgreSQL"
		"${load[@]}" -endpoint "https://localhost:${ports[1]}/" -ca-file "$out/gateway-1.pem" -label postgres \
			-server-pid "${gw_pid[1]}" -metrics "http://127.0.0.1:9471/metrics" -out "$out/postgres-${round}.json" \
			-baseline "$out/pebble-${round}.json"
		files+=("$out/pebble-${round}.json" "$out/postgres-${round}.json")
	done
	./bin/mayfly-load -summarize "${files[@]}" | tee "$out/summary-backends.txt"
	stop_servers
	pg_start "$(mktemp -d)"
fi

if [[ ",$parts," == *",2,"* ]]; then
	say "part 2: one, two and three gateways over one PostgreSQL"
	# One certificate for all three, as behind a load balancer.
	gateway 1 --data-dir "$tmp/g1" --postgres "$pg_url" --partitions "$ranges"
	gateway 2 --data-dir "$tmp/g2" --postgres "$pg_url" --partitions "$ranges" --cert "$tmp/g1/cert.pem" --cert-key "$tmp/g1/key.pem"
	gateway 3 --data-dir "$tmp/g3" --postgres "$pg_url" --partitions "$ranges" --cert "$tmp/g1/cert.pem" --cert-key "$tmp/g1/key.pem"
	endpoints=() metrics=() pids=()
	for i in 1 2 3; do
		endpoints+=("https://localhost:${ports[$i]}/")
		metrics+=("http://127.0.0.1:947$i/metrics")
		pids+=("${gw_pid[$i]}")
	done
	join() { local IFS=,; echo "$*"; }
	files2=() files3=()
	for round in $(seq 1 "$rounds"); do
		for n in 1 2 3; do
			say "round ${round}: ${n} gateway(s)"
			"${load[@]}" -endpoint "$(join "${endpoints[@]:0:$n}")" -ca-file "$tmp/g1/cert.pem" -label "${n}-gateways" \
				-server-pid "$(join "${pids[@]:0:$n}")" -metrics "$(join "${metrics[@]:0:$n}")" \
				-database "mayfly-load-$round-$n" -out "$out/gw${n}-${round}.json"
		done
		files2+=("$out/gw1-${round}.json" "$out/gw2-${round}.json")
		files3+=("$out/gw1-${round}.json" "$out/gw3-${round}.json")
	done
	{
		./bin/mayfly-load -summarize "${files2[@]}"
		./bin/mayfly-load -summarize "${files3[@]}"
	} | tee "$out/summary-gateways.txt"
fi
