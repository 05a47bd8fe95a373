#!/usr/bin/env bash
# `make test`: lint, unit and race one after the other, then e2e and fuzz
# side by side; every part runs, each one's result and time are reported,
# and the script fails if any part failed.
#
# e2e keeps about one of two processors busy (alone: 144 s, 166 s of CPU),
# its suites waiting on the server's answers, while fuzz keeps both busy
# (141 s): one after the other they took 285 s, side by side 191 s, e2e's
# JavaScript suites running at about half their speed. Each fuzz target
# then fuzzes with one worker (FUZZ_PARALLEL), two targets at a time; its
# output is held until e2e's has been printed.
set -uo pipefail

cd "$(dirname "$0")/.."
export FUZZTIME=${FUZZTIME:-8s}
status=0
summary=

# line NAME RESULT SECONDS [NOTE]: adds a part's line to the summary.
line() { summary+=$(printf '\n  %-5s %-6s %4ss %s' "$@"); }

# part NAME: runs `make NAME` and adds its line.
part() {
	local start=$SECONDS result=ok
	make --no-print-directory "$1" || { result=FAILED; status=1; }
	line "$1" "$result" $((SECONDS - start))
}

for p in lint unit race; do
	part "$p"
done

fuzzlog=$(mktemp)
trap 'rm -f "$fuzzlog"' EXIT
start=$SECONDS
FUZZ_PARALLEL=${FUZZ_PARALLEL:-1} make --no-print-directory fuzz >"$fuzzlog" 2>&1 &
fuzz=$!
part e2e
result=ok
wait "$fuzz" || { result=FAILED; status=1; }
cat "$fuzzlog"
line fuzz "$result" $((SECONDS - start)) "(beside e2e)"

printf '\nmake test:%s\n' "$summary"
exit $status
