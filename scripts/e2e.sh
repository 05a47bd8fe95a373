#!/usr/bin/env bash
# End-to-end suites: start a fresh in-memory Mayfly on :8081 and run the
# official SDKs against it.
#   (a) the Go SDK's own emulator tests, judged by integration/emulator-suite.txt
#   (b) the JavaScript SDK smoke test in integration/js
#   (c) the JavaScript query tests, and the DocumentDB-era SDK's, against a
#       server with 4 partition key ranges
#   (d) the Go SDK's emulator tests again, against a gateway over a
#       throwaway PostgreSQL cluster (scripts/lib.sh pg_start)
# (c) runs beside (a), (b) and (e), on a server of its own: the suites
# mostly wait on each other's answers, and one after another they kept
# one of two processors busy. Its output follows theirs.
# Logs go to bin/e2e/. Exits non-zero if the server fails to start or
# either suite fails. The SDK tests hard-code https://localhost:8081/, so the
# port is fixed; if it is taken the script stops rather than touch whatever
# holds it.
set -euo pipefail

cd "$(dirname "$0")/.."
. scripts/lib.sh
lock_checkout
port=8081
endpoint="https://localhost:${port}/"
out=bin/e2e

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	say "node or npm missing; installing the Debian packages"
	sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm >/dev/null
fi
require_free_port "$port"
rm -rf "$out"
mkdir -p "$out"
pem="$PWD/$out/emulator.pem"

say "build"
t0=$SECONDS
# The server is built with the storage invariant checks (internal/storage/
# check.go): a store call that breaks the contract panics and fails a test.
tags=${MAYFLY_E2E_TAGS-invariants}
go build -tags "$tags" -o "$out/" ./cmd/mayfly ./integration/emulatorsuite
echo "built $out/mayfly (tags: ${tags:-none}) and $out/emulatorsuite in $((SECONDS - t0))s"

say "start mayfly --in-memory on :${port}"
trap stop_servers EXIT
trap 'exit 130' INT TERM
# As the emulator the Go SDK's tests were written against: a compute
# gateway on 8903, Strong consistency, and 127.0.0.1 advertised.
require_free_port 8903
start_server "$out/mayfly.log" "$out/mayfly" --in-memory --addr "localhost:${port}" \
	--compute-addr "localhost:8903" --consistency Strong --advertise-host 127.0.0.1
server_pid=$started_pid
wait_ready "$endpoint" "$server_pid" "$out/mayfly.log" "$pem"

status=0

say "JavaScript packages for (b) and (c)"
(cd integration/js && npm ci --no-audit --no-fund --loglevel=error) || fail "npm ci in integration/js failed"

multi_port=8083
require_free_port "$multi_port"
start_server "$out/mayfly-partitions.log" "$out/mayfly" --in-memory --partitions 4 --addr "localhost:${multi_port}" --metrics-addr off
multi_pid=$started_pid
wait_ready "https://localhost:${multi_port}/" "$multi_pid" "$out/mayfly-partitions.log" "$out/partitions.pem"
# (c) JavaScript SDK queries over 4 partition key ranges, in the
# background; its output goes to $out/c.log and its time and verdict to
# $out/c.result.
(
	t0=$SECONDS
	if (cd integration/js && MAYFLY_ENDPOINT="https://localhost:${multi_port}/" MAYFLY_CA_FILE="$PWD/../../$out/partitions.pem" \
		node --test --test-reporter=spec query.test.js smoke.test.js querydiff.test.js documentdb.test.js changefeed.test.js); then
		result=ok
	else
		result=FAILED
	fi
	echo "$((SECONDS - t0)) $result" >"$out/c.result"
) >"$out/c.log" 2>&1 &
c_pid=$!

say "(a) Go SDK emulator suite"
t0=$SECONDS
if ! "$out/emulatorsuite" -list integration/emulator-suite.txt -work "$out/emulator" -ca-file "$pem"; then
	status=1
	echo "(a) FAILED"
fi
took_a=$((SECONDS - t0))

say "(b) JavaScript SDK smoke test"
t0=$SECONDS
if ! (cd integration/js && MAYFLY_ENDPOINT="$endpoint" MAYFLY_CA_FILE="$pem" node --test --test-reporter=spec); then
	status=1
	echo "(b) FAILED"
fi
took_b=$((SECONDS - t0))

say "(e) the Data Explorer in headless Chromium"
t0=$SECONDS
if ! command -v chromium >/dev/null; then
	say "chromium missing; installing the Debian package"
	sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
	$sudo apt-get update -qq && $sudo apt-get install -y -qq chromium >/dev/null
fi
if ! (cd integration/browser && npm ci --no-audit --no-fund --loglevel=error &&
	MAYFLY_ENDPOINT="$endpoint" CHROMIUM="$(command -v chromium)" SCREENSHOTS="$PWD/../../$out/screenshots" \
		node --test --test-reporter=spec); then
	status=1
	echo "(e) FAILED"
fi
took_e=$((SECONDS - t0))

if ! kill -0 "$server_pid" 2>/dev/null; then
	status=1
	echo "mayfly exited during the tests; see $out/mayfly.log"
fi

say "(c) JavaScript SDK queries over 4 partition key ranges (ran beside the above)"
wait "$c_pid" || true
cat "$out/c.log"
read -r took_c c_result <"$out/c.result" 2>/dev/null || c_result=FAILED
if [ "$c_result" != ok ]; then
	status=1
	echo "(c) FAILED"
fi

say "(d) Go SDK emulator suite against a gateway over PostgreSQL"
t0=$SECONDS
stop_servers
pg_start "$(mktemp -d)"
require_free_port "$port"
start_server "$out/mayfly-postgres.log" "$out/mayfly" --postgres "$pg_url" --data-dir "$out/postgres-data" \
	--addr "localhost:${port}" --compute-addr "localhost:8903" --consistency Strong --advertise-host 127.0.0.1
pg_server_pid=$started_pid
wait_ready "$endpoint" "$pg_server_pid" "$out/mayfly-postgres.log" "$PWD/$out/postgres.pem"
if ! "$out/emulatorsuite" -list integration/emulator-suite.txt -work "$out/emulator-postgres" -ca-file "$PWD/$out/postgres.pem"; then
	status=1
	echo "(d) FAILED"
	tail -n 40 "$out/mayfly-postgres.log" || true
fi
took_d=$((SECONDS - t0))
if [ "$status" -ne 0 ]; then
	echo "--- last lines of $out/mayfly.log"
	tail -n 40 "$out/mayfly.log" || true
fi

say "e2e summary"
echo "(a) Go SDK emulator suite: ${took_a}s"
echo "(b) JavaScript SDK smoke:  ${took_b}s"
echo "(c) JS queries, 4 ranges:   ${took_c:-?}s (beside a, b and e)"
echo "(d) Go suite, PostgreSQL:   ${took_d}s"
echo "(e) Data Explorer, browser: ${took_e}s"
if [ "$status" -eq 0 ]; then echo "e2e: ok"; else echo "e2e: FAILED"; fi
exit "$status"
