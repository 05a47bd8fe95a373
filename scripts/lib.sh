# Helpers shared by e2e.sh and bench.sh. Source it; it defines functions
# only. Servers started with start_server are stopped by stop_servers,
# which the caller installs as its EXIT trap.

say() { printf '\n==> %s\n' "$*"; }
fail() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; exit 1; }

# lock_checkout: let one e2e or bench run at a time use this checkout (they
# share ports 8081/8082, bin/ and integration/js/node_modules); a second run
# waits for the first instead of colliding with it.
lock_checkout() {
	command -v flock >/dev/null || return 0
	mkdir -p bin
	exec 9>bin/.e2e.lock
	if ! flock -n 9; then
		echo "another e2e or bench run is using this checkout; waiting for it to finish"
		flock -w 1800 9 || fail "gave up waiting for the other run after 30 minutes"
	fi
}

# require_free_port PORT: stop if something already listens on PORT.
require_free_port() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
		fail "port $1 is already in use; stop whatever listens there and retry"
	fi
}

server_pids=()

# start_server LOG CMD...: start CMD in the background, output to LOG.
# The pid is left in $started_pid.
start_server() {
	local log=$1
	shift
	"$@" >"$log" 2>&1 &
	started_pid=$!
	server_pids+=("$started_pid")
}

stop_servers() {
	local pid
	for pid in "${server_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${server_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}

# wait_ready URL PID LOG PEM: poll URL/_explorer/emulator.pem until it
# answers, saving it to PEM; fail if PID exits or 60s pass.
wait_ready() {
	local url=$1 pid=$2 log=$3 pem=$4 t0=$SECONDS
	command -v curl >/dev/null || fail "curl is required to wait for the server"
	until curl -ksf -o "$pem" "${url}_explorer/emulator.pem"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "--- $log"; cat "$log"
			fail "the server exited before it was ready"
		fi
		if [ $((SECONDS - t0)) -ge 60 ]; then
			echo "--- $log"; cat "$log"
			fail "the server was not ready after 60s"
		fi
		sleep 0.2
	done
	# Whatever answered must be our server, not one that held the port.
	sleep 0.2
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "--- $log"; cat "$log"
		fail "the server exited after $url answered: another process is serving that port"
	fi
	echo "ready at $url in $((SECONDS - t0))s"
}
