#!/usr/bin/env bash
# End-to-end suites: start a fresh in-memory Mayfly on :8081 and run the
# official SDKs against it.
#   (a) the Go SDK's own emulator tests, judged by integration/emulator-suite.txt
#   (b) the JavaScript SDK smoke test in integration/js
# Logs go to bin/e2e/. Exits non-zero if the server fails to start or
# either suite fails. The SDK tests hard-code https://localhost:8081/, so the
# port is fixed; if it is taken the script stops rather than touch whatever
# holds it.
set -euo pipefail

cd "$(dirname "$0")/.."
port=8081
endpoint="https://localhost:${port}/"
out=bin/e2e

say() { printf '\n==> %s\n' "$*"; }
fail() { printf 'e2e: %s\n' "$*" >&2; exit 1; }

command -v curl >/dev/null || fail "curl is required to wait for the server"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	say "node or npm missing; installing the Debian packages"
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	else
		sudo apt-get update -qq && sudo apt-get install -y -qq nodejs npm >/dev/null
	fi
fi

if (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
	fail "port ${port} is already in use; stop whatever listens there (the SDK tests need exactly this port)"
fi

rm -rf "$out"
mkdir -p "$out"

say "build"
t0=$SECONDS
go build -o bin/ ./cmd/mayfly ./integration/emulatorsuite
echo "built bin/mayfly and bin/emulatorsuite in $((SECONDS - t0))s"

say "start mayfly --in-memory on :${port}"
server_pid=
stop_server() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill "$server_pid" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

./bin/mayfly --in-memory --addr ":${port}" >"$out/mayfly.log" 2>&1 &
server_pid=$!

t0=$SECONDS
until curl -ksf -o "$out/emulator.pem" "${endpoint}_explorer/emulator.pem"; do
	if ! kill -0 "$server_pid" 2>/dev/null; then
		echo "--- mayfly.log"; cat "$out/mayfly.log"
		fail "mayfly exited before it was ready"
	fi
	if [ $((SECONDS - t0)) -ge 60 ]; then
		echo "--- mayfly.log"; cat "$out/mayfly.log"
		fail "mayfly not ready after 60s"
	fi
	sleep 0.2
done
echo "ready in $((SECONDS - t0))s; certificate saved to $out/emulator.pem"

status=0
declare -A took

say "(a) Go SDK emulator suite"
t0=$SECONDS
if ! ./bin/emulatorsuite -list integration/emulator-suite.txt -work "$out/emulator" -ca-file "$PWD/$out/emulator.pem"; then
	status=1
	echo "(a) FAILED"
fi
took[a]=$((SECONDS - t0))

say "(b) JavaScript SDK smoke test"
t0=$SECONDS
if ! (cd integration/js && npm ci --no-audit --no-fund --loglevel=error &&
	MAYFLY_ENDPOINT="$endpoint" MAYFLY_CA_FILE="$PWD/../../$out/emulator.pem" node --test --test-reporter=spec); then
	status=1
	echo "(b) FAILED"
fi
took[b]=$((SECONDS - t0))

if ! kill -0 "$server_pid" 2>/dev/null; then
	status=1
	echo "mayfly exited during the tests; see $out/mayfly.log"
fi
if [ "$status" -ne 0 ]; then
	echo "--- last lines of $out/mayfly.log"
	tail -n 40 "$out/mayfly.log" || true
fi

say "e2e summary"
echo "(a) Go SDK emulator suite: ${took[a]}s"
echo "(b) JavaScript SDK smoke:  ${took[b]}s"
if [ "$status" -eq 0 ]; then echo "e2e: ok"; else echo "e2e: FAILED"; fi
exit "$status"
