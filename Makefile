# Mayfly's entry points. `make test` is what CI runs (.ci/run).

GO ?= go

.PHONY: build run test lint unit e2e race bench fuzz crash clean

## build: compile every command into bin/. The linker writes a binary
## through a memory mapping, which leaves it in the page cache in 2 MiB
## folios that a process maps whole on its first touch of each: a server
## started from such a file idles at 34 MB rather than 25. Each binary is
## linked in bin/.link and copied into place, which caches it in small
## pages (docs/benchmarks.md, "Memory, group commit and point lookups").
build:
	$(GO) build -o bin/.link/ ./cmd/...
	for f in bin/.link/*; do cp "$$f" "bin/.$${f##*/}.new" && mv "bin/.$${f##*/}.new" "bin/$${f##*/}"; done

## run: build, then start the server with its default flags
run: build
	./bin/mayfly

## test: lint, Go unit and integration tests (with the storage invariant
## checks built in), the same under the race detector, then the end-to-end
## SDK suites and, beside them, every fuzz target beyond its seeds for
## FUZZTIME (8 s here); every part runs, and the target fails if any part
## failed (scripts/test.sh)
test:
	scripts/test.sh

## lint: gofmt, go vet, staticcheck, forbidden calls, import direction and
## package names (internal/lint)
lint:
	$(GO) test -count=1 ./internal/lint

## unit: every Go test in the module except lint, built with the invariants
## tag: every store call, in the engine's tests and in servers the tests
## start, is checked against the storage contract (internal/storage/check.go);
## beside them the engine's tests again over PostgreSQL, in shards side by
## side, then the HTTP API's (scripts/unit.sh). Tests that need
## PostgreSQL start a throwaway cluster of their own (internal/storage/pgtest).
unit:
	scripts/postgres-binaries.sh
	scripts/unit.sh

## e2e: the Go SDK emulator suite and the JavaScript suites against a
## bin/mayfly built with the invariants tag
e2e:
	scripts/e2e.sh

## race: every Go test except lint under the race detector, in short mode:
## the randomized tests draw the fewer cases they draw over PostgreSQL (unit
## draws them all), and the tests that run the built command in a process
## of its own, which the detector does not instrument, are left to unit;
## the engine's in shards beside the other packages (scripts/race.sh)
race:
	scripts/postgres-binaries.sh
	scripts/race.sh

## bench: Mayfly against the floor server with the Go SDK load tool
bench:
	scripts/bench.sh

## fuzz: every fuzz target in the module for FUZZTIME each (default 20s),
## FUZZ_JOBS (default 2) at a time; failing inputs are kept in each
## package's testdata/fuzz
fuzz:
	scripts/fuzz.sh

## crash: the kill -9 campaign, CRASH_ROUNDS rounds (default 50) of the crash
## test: mixed writes, deletes and purges, a SIGKILL at a random moment, a
## restart, and every acknowledged write, no half write and no expired item
## checked after it (integration/crash_test.go)
crash:
	@mkdir -p bin; status=0; \
	$(GO) test -count=$${CRASH_ROUNDS:-50} -timeout 90m -run '^TestCrash_KillDuringWritesAndPurge$$' -v ./integration \
		> bin/crash.log 2>&1 || status=1; \
	grep -E 'acknowledged writes|present .* items|--- (PASS|FAIL)' bin/crash.log; \
	printf 'rounds passed: %s of %s (log: bin/crash.log)\n' "$$(grep -c -- '--- PASS' bin/crash.log)" "$${CRASH_ROUNDS:-50}"; \
	exit $$status

clean:
	rm -rf bin
