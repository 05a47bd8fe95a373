# Helpers shared by the scripts under scripts/. Source it; it defines functions
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
	server_pids=()
	pg_stop
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

# pg_install: set $pg_bin to the directory of PostgreSQL's server binaries,
# installing Debian's postgresql package when there are none.
pg_install() {
	pg_bin=$(dirname "$(command -v pg_ctl 2>/dev/null || true)")
	if [ ! -x "$pg_bin/initdb" ]; then
		pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	fi
	if [ ! -x "$pg_bin/initdb" ]; then
		say "PostgreSQL's server binaries missing; installing the Debian package"
		local sudo=; [ "$(id -u)" = 0 ] || sudo=sudo
		$sudo apt-get update -qq && $sudo apt-get install -y -qq postgresql >/dev/null
		pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	fi
}

# pg_start DIR: initialise and start a throwaway PostgreSQL cluster in DIR
# (new or empty) on a free port, listening on 127.0.0.1 and a
# socket in DIR, and set $pg_url to its postgres database. Installs
# Debian's postgresql package when no server binaries are found. As root
# the cluster runs as the postgres user (PostgreSQL refuses root). pg_stop
# stops it; stop_servers calls pg_stop too.
pg_dir=
pg_bin=
pg_start() {
	pg_dir=$1
	pg_install
	local as=()
	mkdir -p "$pg_dir"
	if [ "$(id -u)" = 0 ]; then
		chown postgres: "$pg_dir"
		as=(runuser -u postgres --)
	fi
	local port
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	"${as[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U mayfly --auth=trust -E UTF8 --no-sync >"$pg_dir/initdb.log" 2>&1 ||
		fail "initdb failed; see $pg_dir/initdb.log"
	"${as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/log" -w -t 60 \
		-o "-p $port -k $pg_dir -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null ||
		fail "PostgreSQL did not start; see $pg_dir/log"
	pg_url="postgres://mayfly@127.0.0.1:${port}/postgres?sslmode=disable"
	pg_as=("${as[@]}")
}

pg_stop() {
	[ -n "$pg_dir" ] || return 0
	"${pg_as[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null 2>&1 || true
	rm -rf "$pg_dir"
	pg_dir=
}

# run_shards LABEL SHARDS BINARY DIR ARGS...: run the tests of the Go test
# binary BINARY (built with go test -c from the package in DIR) in SHARDS
# processes side by side, shard i running every SHARDS-th test from the
# i-th, each with ARGS. A line per shard says how it ended; a failing
# shard's output follows it. Returns non-zero if any shard failed.
run_shards() {
	local label=$1 shards=$2 bin=$3 dir=$4
	shift 4
	local names pattern pids=() i j status=0 start=$SECONDS result
	mapfile -t names < <("$bin" -test.list '.*' | grep -E '^(Test|Fuzz|Example)')
	[ "${#names[@]}" -gt 0 ] || { echo "$label: the test binary lists no tests" >&2; return 1; }
	for ((i = 0; i < shards; i++)); do
		pattern=
		for ((j = i; j < ${#names[@]}; j += shards)); do
			pattern+="${pattern:+|}${names[j]}"
		done
		# A test binary runs in its package's directory, as go test runs it.
		(cd "$dir" && "$bin" -test.run "^(${pattern})\$" "$@" >"$bin.shard$i.log" 2>&1) &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		if wait "${pids[i]}"; then
			result=ok
		else
			result=FAIL
			status=1
			cat "$bin.shard$i.log"
		fi
		printf '%s\t%s, shard %d of %d (%d tests)\t%ds\n' \
			"$result" "$label" $((i + 1)) "$shards" $(((${#names[@]} - i + shards - 1) / shards)) $((SECONDS - start))
	done
	return $status
}
