//go:build race

package engine

import "testing"

// RaceEnabled is set under the race detector, which slows the differential
// and metamorphic tests several times over (they run fewer, smaller
// scenarios) and makes sync.Pool drop pooled objects at random, so the
// bytes a page allocates follow the store's iterators rather than what the
// page holds (TestDrainHoldsOnePage does not run). Exported for the
// engine_test package.
const RaceEnabled = true

// skipMegabytesUnderRace skips a test whose documents run to megabytes
// under the race detector. The detector keeps shadow memory for every
// byte and faults it in afresh for each large allocation:
// TestPagesStayUnderTheResponseBound took 39 s under it against 1.8 s
// without, half of it in the kernel. What they check, the bytes and rows
// of each page, the unit run and the run over PostgreSQL check.
func skipMegabytesUnderRace(t *testing.T) {
	t.Helper()
	t.Skip("documents of megabytes: the race detector's shadow memory makes it twenty times slower")
}
