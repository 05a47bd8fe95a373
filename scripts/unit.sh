#!/usr/bin/env bash
# `make unit`: every Go test in the module except lint, built with the
# invariants tag, and beside it the engine's tests again over PostgreSQL
# (MAYFLY_TEST_STORE=postgres); then the HTTP API's over PostgreSQL.
#
# The engine's tests over PostgreSQL are the longest part: the test binary
# and the server take turns, one waiting for the other's answer, and
# together keep about one processor busy. Run one after another they took
# 470-500 s on two idle cores; in UNIT_PG_SHARDS shards (default 2) side
# by side, 335 and 374 s; in short mode (below), 275 and 340 s, and with
# the tests' items loaded a hundred to a transaction, 213 and 264 s; in CI
# runs of 1,100-1,300 s in all, 256-363 s, and 247-256 s once the long
# sort values' test no longer paid a scan per value (130 s of it). Three
# shards were no faster: the two processors are busy. One test binary, each shard running every n-th of its tests
# against a cluster of its own (internal/storage/pgtest), in short mode:
# the randomized tests that drain hundreds of queries run a fraction of
# them there (the in-memory run above runs them all), enough to exercise
# the store. The shards wait on each other's round trips part of the
# time, so they run beside the first go test rather than after it: one
# after the other 165 and 331 s, side by side 445 s in all, where the two
# took 509 s in turn. The script fails if any part failed, after running
# all.
set -uo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh
status=0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! go test -c -tags invariants -o "$work/engine.test" ./internal/engine; then
	exit 1
fi
MAYFLY_TEST_STORE=postgres run_shards "internal/engine over PostgreSQL" "${UNIT_PG_SHARDS:-2}" "$work/engine.test" internal/engine \
	-test.short -test.count=1 -test.timeout 10m >"$work/pg.log" 2>&1 &
pg=$!

go test -tags invariants -count=1 -timeout 10m $(go list ./... | grep -v '/internal/lint$') || status=1

wait "$pg" || status=1
cat "$work/pg.log"

MAYFLY_TEST_STORE=postgres go test -tags invariants -count=1 -timeout 10m ./internal/httpapi || status=1
exit $status
