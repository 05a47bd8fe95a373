#!/usr/bin/env bash
# Throughput of Mayfly against the floor: the same Go SDK load
# (cmd/mayfly-load) runs against cmd/mayfly-floor, a server that checks
# signatures and answers with canned bodies, and against Mayfly with an
# on-disk data directory, and Mayfly's per-phase throughput is printed as a
# ratio of the floor's.
#
# The two alternate phase by phase (the floor's creates, then Mayfly's, the
# floor's reads, then Mayfly's, ...), so that the two halves of a ratio are
# measured seconds apart on a machine whose speed drifts from minute to
# minute; the working set a round's create phase writes stays for its other
# phases, and its database is deleted when the round ends. This runs
# BENCH_ROUNDS times, and the summary gives per phase the median of each
# round's ratio, the server CPU time per operation of each (from /proc) and
# Mayfly's peak resident memory.
#
# When the phases include create, each round also runs the create phase
# against the synced floor (cmd/mayfly-floor -sync-dir), which answers a
# write only once a group commit has synced it to a log file: what
# durability alone allows on this machine's disk. The summary then sets
# Mayfly's creates against it as well, and it against the floor.
#
# Tunables (environment): BENCH_DURATION (per phase, default 10s),
# BENCH_CONCURRENCY (default 16), BENCH_ITEMS (default 10000),
# BENCH_PARTITIONS (partition key values, default 64), BENCH_ROUNDS
# (default 3), BENCH_PHASES (default create,read,query,range),
# BENCH_MAYFLY_FLAGS (more flags for mayfly, e.g. "--memtable-mib 8
# --cache-mib 16"; default none), BENCH_FLOOR_FLAGS (more flags for the
# floor: "-mayfly-h2" serves it over Mayfly's HTTP/2 server; default none).
# Results go to bin/bench/.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh
lock_checkout
duration=${BENCH_DURATION:-10s}
concurrency=${BENCH_CONCURRENCY:-16}
items=${BENCH_ITEMS:-10000}
partitions=${BENCH_PARTITIONS:-64}
rounds=${BENCH_ROUNDS:-3}
phases=${BENCH_PHASES:-create,read,query,range}
read -r -a mayfly_flags <<< "${BENCH_MAYFLY_FLAGS:-}"
read -r -a floor_flags <<< "${BENCH_FLOOR_FLAGS:-}"
mayfly_port=8081
floor_port=8082
synced_port=8083
synced=false
[[ ",$phases," == *,create,* ]] && synced=true
out=bin/bench

require_free_port "$mayfly_port"
require_free_port "$floor_port"
if $synced; then require_free_port "$synced_port"; fi
rm -rf "$out"
mkdir -p "$out"
data=$(mktemp -d)
cleanup() { stop_servers; rm -rf "$data"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

say "build"
# As make run does: a binary fresh from the linker idles 9 MB larger
# (Makefile, build), and that would count in the peak measured here.
make --no-print-directory build

say "start the floor on :${floor_port} and mayfly on :${mayfly_port} (data in ${data})"
start_server "$out/floor.log" ./bin/mayfly-floor -addr ":${floor_port}" -range-rows $((items / partitions)) "${floor_flags[@]}"
floor_pid=$started_pid
if $synced; then
	mkdir "$data/synced-floor"
	start_server "$out/synced-floor.log" ./bin/mayfly-floor -addr ":${synced_port}" -sync-dir "$data/synced-floor" "${floor_flags[@]}"
	synced_pid=$started_pid
fi
start_server "$out/mayfly.log" ./bin/mayfly --addr "localhost:${mayfly_port}" --data-dir "$data" "${mayfly_flags[@]}"
mayfly_pid=$started_pid
wait_ready "https://localhost:${floor_port}/" "$floor_pid" "$out/floor.log" "$out/floor.pem"
if $synced; then
	wait_ready "https://localhost:${synced_port}/" "$synced_pid" "$out/synced-floor.log" "$out/synced-floor.pem"
fi
wait_ready "https://localhost:${mayfly_port}/" "$mayfly_pid" "$out/mayfly.log" "$out/mayfly.pem"

load=(./bin/mayfly-load -concurrency "$concurrency" -duration "$duration" -items "$items" -partitions "$partitions")
IFS=, read -r -a phase_list <<< "$phases"

files=()
synced_files=()
floor_synced_files=()
for round in $(seq 1 "$rounds"); do
	for i in "${!phase_list[@]}"; do
		phase=${phase_list[$i]}
		# The first phase of a round writes the working set (or fills it,
		# untimed, before reading), the ones after it find it there, and
		# the last deletes the database.
		state=()
		if ((i > 0)); then state+=(-existing); fi
		if ((i < ${#phase_list[@]} - 1)); then state+=(-keep); else state+=(-drop); fi
		floor_out="$out/floor-${round}-${phase}.json"
		say "round ${round}: ${phase} against the floor"
		"${load[@]}" -phases "$phase" "${state[@]}" -endpoint "https://localhost:${floor_port}/" -ca-file "$out/floor.pem" \
			-label floor -server-pid "$floor_pid" -out "$floor_out"
		mayfly_out="$out/mayfly-${round}-${phase}.json"
		if $synced && [[ $phase == create ]]; then
			say "round ${round}: create against the synced floor"
			"${load[@]}" -phases create -endpoint "https://localhost:${synced_port}/" -ca-file "$out/synced-floor.pem" \
				-label synced-floor -server-pid "$synced_pid" -out "$out/synced-floor-${round}.json" -baseline "$floor_out"
			floor_synced_files+=("$floor_out" "$out/synced-floor-${round}.json")
			synced_files+=("$out/synced-floor-${round}.json" "$mayfly_out")
		fi
		say "round ${round}: ${phase} against mayfly"
		"${load[@]}" -phases "$phase" "${state[@]}" -endpoint "https://localhost:${mayfly_port}/" -ca-file "$out/mayfly.pem" \
			-label mayfly -server-pid "$mayfly_pid" -out "$mayfly_out" -baseline "$floor_out"
		files+=("$floor_out" "$mayfly_out")
	done
done
{
	./bin/mayfly-load -summarize "${files[@]}"
	if $synced; then
		./bin/mayfly-load -summarize "${synced_files[@]}"
		./bin/mayfly-load -summarize "${floor_synced_files[@]}"
	fi
} | tee "$out/summary.txt"
