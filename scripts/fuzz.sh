#!/usr/bin/env bash
# Runs every fuzz target in the module, FUZZ_JOBS (default 2) at a time,
# for FUZZTIME each (default 20s). Go keeps any input that fails in the package's
# testdata/fuzz/<Target>/ directory; commit it, and from then on the plain
# `go test` of that package replays it as a regression test.
#
# Tunables (environment): FUZZTIME (per target, default 20s), FUZZ_ONLY
# (a regular expression; run only the targets whose "package.Target" name
# matches it), FUZZ_JOBS (targets at once), FUZZ_PARALLEL
# (fuzzing workers per target, default the processors over FUZZ_JOBS), FUZZMINIMIZETIME (how long a worker may shrink an input,
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
jobs=${FUZZ_JOBS:-2}
workers=${FUZZ_PARALLEL:-$(( $(nproc) / jobs > 0 ? $(nproc) / jobs : 1 ))}

# Every "func FuzzX(" in a _test.go file, as "dir target" pairs.
mapfile -t targets < <(grep -rEo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . |
	sed -E 's#^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' | sort -u)
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }

work=$(mktemp -d)
cache=$(mktemp -d)
trap 'rm -rf "$work" "$cache"' EXIT

# test_bin is the fuzzing test binary of package directory $1 (built below).
test_bin() { echo "$work/bin/${1//\//_}.test"; }

# fuzz_one fuzzes target $2 of package directory $1, writing its output
# to $3.log and its verdict to $3.verdict: ok, raced (golang/go#75804,
# below), failed, or idle (it never got past replaying its corpus).
fuzz_one() {
	local dir=$1 name=$2 out=$3 corpus before bin
	bin=$(test_bin "$dir")
	[ -x "$bin" ] || { echo "the package's fuzzing test binary did not build" >"$out.log"; echo failed >"$out.verdict"; return; }
	# -test.run '^$' skips the package's other tests; the seed corpus and
	# testdata/fuzz still run first, as part of fuzzing. The binary runs
	# in its package's directory, as go test runs it: that is where it
	# finds testdata/fuzz and keeps a failing input.
	corpus="$dir/testdata/fuzz/$name"
	before=$(ls "$corpus" 2>/dev/null)
	if ! (cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${name}\$" -test.fuzztime "$fuzztime" -test.fuzzminimizetime "$minimize" \
		-test.parallel "$workers" -test.fuzzcachedir "$cache/$dir") >"$out.log" 2>&1; then
		# Go 1.26's fuzzing coordinator can fail a target at the end of
		# -fuzztime with a bare "context deadline exceeded" when a worker
		# is slow to stop (golang/go#75804, fixed in Go 1.27): no input
		# failed. That, after fuzzing began, with no new failing input
		# kept and the corpus replaying clean, is not counted as a failure.
		if [ "$(ls "$corpus" 2>/dev/null)" = "$before" ] && grep -qx '    context deadline exceeded' "$out.log" &&
			grep -q 'now fuzzing' "$out.log" &&
			(cd "$dir" && "$bin" -test.run "^${name}\$") >/dev/null 2>&1; then
			echo raced >"$out.verdict"
		else
			echo failed >"$out.verdict"
		fi
	elif ! grep -q 'now fuzzing' "$out.log"; then
		echo idle >"$out.verdict"
	else
		echo ok >"$out.verdict"
	fi
}

# The targets run $jobs at a time, each with the machine's processors
# shared out among them: a target fuzzes for a fixed time, not a fixed
# number of inputs, so running two at once on two processors halves the
# wall time and gives each half the inputs.
selected=()
for entry in "${targets[@]}"; do
	if [ -z "$only" ] || [[ "${entry% *}.${entry#* }" =~ $only ]]; then
		selected+=("$entry")
	fi
done
# One fuzzing test binary per package, built before any target runs:
# built by go test -fuzz for each target, the engine's alone was linked
# ten times, and the builds took as long as the fuzzing.
mkdir -p "$work/bin"
for dir in $(for entry in "${selected[@]}"; do echo "${entry% *}"; done | sort -u); do
	go test -c -fuzz . -o "$(test_bin "$dir")" "./$dir" || echo "fuzz.sh: the fuzzing test binary of $dir did not build" >&2
done

failed=()
raced=()
ran=${#selected[@]}
declare -A running=() # pid of a target's job -> its index in selected
reported=0

# report prints the output of target $1 (an index in selected), which has
# finished, and counts its verdict.
report() {
	local entry=${selected[$1]}
	reported=$((reported + 1))
	printf '\n==> %s (%s, %s workers)\n' "$entry" "$fuzztime" "$workers"
	cat "$work/$1.log"
	case $(cat "$work/$1.verdict" 2>/dev/null) in
	ok) ;;
	raced) raced+=("$entry") ;;
	idle)
		printf 'fuzz.sh: %s replayed its corpus for all of %s and fuzzed nothing\n' "$entry" "$fuzztime"
		failed+=("$entry")
		;;
	*) failed+=("$entry") ;;
	esac
}

# finish waits for the next target to end and reports it.
finish() {
	local pid
	wait -n -p pid
	report "${running[$pid]}"
	unset "running[$pid]"
}

for i in "${!selected[@]}"; do
	while [ "${#running[@]}" -ge "$jobs" ]; do
		finish
	done
	entry=${selected[$i]}
	fuzz_one "${entry% *}" "${entry#* }" "$work/$i" &
	running[$!]=$i
done
while [ "${#running[@]}" -gt 0 ]; do
	finish
done

printf '\nmake fuzz: %d targets, %d failed\n' "$ran" "${#failed[@]}"
for r in "${raced[@]}"; do
	printf '  stopped by the fuzztime race (golang/go#75804), corpus replays clean: %s\n' "$r"
done
for f in "${failed[@]}"; do
	printf '  FAILED %s (a failing input, if one was found, is in %s/testdata/fuzz/%s/)\n' "$f" "${f% *}" "${f#* }"
done
if [ "$reported" -ne "$ran" ]; then
	printf 'fuzz.sh: %d of %d targets reported\n' "$reported" "$ran"
	exit 1
fi
[ "${#failed[@]}" -eq 0 ]
