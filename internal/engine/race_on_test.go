//go:build race

package engine

// RaceEnabled is set under the race detector, which slows the differential
// and metamorphic tests several times over (they run fewer, smaller
// scenarios) and makes sync.Pool drop pooled objects at random, so the
// bytes a page allocates follow the store's iterators rather than what the
// page holds (TestDrainHoldsOnePage does not run). Exported for the
// engine_test package.
const RaceEnabled = true
