#!/usr/bin/env bash
# Runs every fuzz target in the module, one after another, for FUZZTIME
# each (default 20s). Go keeps any input that fails in the package's
# testdata/fuzz/<Target>/ directory; commit it, and from then on the plain
# `go test` of that package replays it as a regression test.
#
# Tunables (environment): FUZZTIME (per target, default 20s), FUZZ_ONLY
# (a regular expression; run only the targets whose "package.Target" name
# matches it), FUZZ_PARALLEL (fuzzing workers per target, default
# GOMAXPROCS), FUZZMINIMIZETIME (how long a worker may shrink an input,
# default 1s). The script fails if any target failed, after running all.
#
# Go's fuzzer shrinks every input that reaches new code before it goes on,
# for up to a minute by default, and its workers report no executions
# meanwhile. With the default, in 45 s runs, FuzzParseTop, FuzzParseItemTTL
# and the document parser's FuzzParse spent 42-45 s shrinking, and in 20 s
# FuzzParseTop made 234,000 executions against 1,530,000 with a 2 s bound
# (README, "Tests"). A failing input is shrunk within the same bound.
#
# Each run starts from the seeds and testdata/fuzz, as on a fresh machine:
# the inputs Go finds interesting are cached in a directory of the run's
# own, not in GOCACHE. There they pile up from run to run, and the fuzzer
# replays them all before it fuzzes, within -fuzztime: once FuzzDifferential
# had 174 of them, replaying took longer than 8 s and the target fuzzed
# nothing. A target that never gets past that replay fails here.
set -uo pipefail

cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-20s}
minimize=${FUZZMINIMIZETIME:-1s}
only=${FUZZ_ONLY:-}
parallel=()
[ -n "${FUZZ_PARALLEL:-}" ] && parallel=(-parallel "$FUZZ_PARALLEL")

# Every "func FuzzX(" in a _test.go file, as "dir target" pairs.
mapfile -t targets < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' | sort -u)
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }

failed=()
raced=()
ran=0
log=$(mktemp)
cache=$(mktemp -d)
trap 'rm -rf "$log" "$cache"' EXIT
for entry in "${targets[@]}"; do
	dir=${entry% *}
	name=${entry#* }
	if [ -n "$only" ] && ! [[ "$dir.$name" =~ $only ]]; then
		continue
	fi
	printf '\n==> %s %s (%s)\n' "$dir" "$name" "$fuzztime"
	ran=$((ran + 1))
	# -run '^$' skips the package's other tests; the seed corpus and
	# testdata/fuzz still run first, as part of fuzzing.
	corpus="$dir/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null)
	if ! go test "./$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${parallel[@]}" \
		-args -test.fuzzcachedir "$cache/$dir" 2>&1 | tee "$log"; then
		# Go 1.26's fuzzing coordinator can fail a target at the end of
		# -fuzztime with a bare "context deadline exceeded" when a worker
		# is slow to stop (golang/go#75804, fixed in Go 1.27): no input
		# failed. That, after fuzzing began, with no new failing input
		# kept and the corpus replaying clean, is not counted as a failure.
		if [ "$(ls "$corpus" 2>/dev/null)" = "$before" ] && grep -qx '    context deadline exceeded' "$log" &&
			grep -q 'now fuzzing' "$log" &&
			go test "./$dir" -run "^${name}\$" >/dev/null 2>&1; then
			raced+=("$dir $name")
		else
			failed+=("$dir $name")
		fi
	elif ! grep -q 'now fuzzing' "$log"; then
		printf 'fuzz.sh: %s %s replayed its corpus for all of %s and fuzzed nothing\n' "$dir" "$name" "$fuzztime"
		failed+=("$dir $name")
	fi
done

printf '\nmake fuzz: %d targets, %d failed\n' "$ran" "${#failed[@]}"
for r in "${raced[@]}"; do
	printf '  stopped by the fuzztime race (golang/go#75804), corpus replays clean: %s\n' "$r"
done
for f in "${failed[@]}"; do
	printf '  FAILED %s (a failing input, if one was found, is in %s/testdata/fuzz/%s/)\n' "$f" "${f% *}" "${f#* }"
done
[ "${#failed[@]}" -eq 0 ]
