#!/usr/bin/env bash
# `make race`: every Go test except lint under the race detector, in short
# mode (Makefile). The engine's tests take the longest by far, and one test
# binary keeps about one processor busy: they run in RACE_SHARDS shards
# (default 2) beside the other packages, as the engine's tests over
# PostgreSQL do in unit.sh. On two cores, alternated with one go test of
# every package: 365 and 409 s. The script fails if any part failed,
# after running all.
set -uo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh
status=0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go test -race -short -count=1 -timeout 15m $(go list ./... | grep -v -e '/internal/lint$' -e '/internal/engine$') &
others=$!
if go test -c -race -o "$work/engine.test" ./internal/engine; then
	run_shards "internal/engine under the race detector" "${RACE_SHARDS:-2}" "$work/engine.test" internal/engine \
		-test.short -test.count=1 -test.timeout 15m || status=1
else
	status=1
fi
wait "$others" || status=1
exit $status
