//go:build race

package engine_test

// raceEnabled makes the differential test run fewer, smaller scenarios
// under the race detector, which slows it several times over.
const raceEnabled = true
