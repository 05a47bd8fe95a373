package pebblestore

import (
	"testing"
	"time"
)

// Write stalls are counted as they begin, and timed as they end; one going
// on counts up to now.
func TestWriteStalls(t *testing.T) {
	var w writeStalls
	t0 := time.Unix(1_700_000_000, 0)
	if n, d := w.read(t0); n != 0 || d != 0 {
		t.Fatalf("no stall yet: %d, %v", n, d)
	}
	w.begin(t0)
	if n, d := w.read(t0.Add(2 * time.Second)); n != 1 || d != 2*time.Second {
		t.Fatalf("a stall going on: %d, %v", n, d)
	}
	w.end(t0.Add(3 * time.Second))
	w.end(t0.Add(9 * time.Second)) // an end without a begin counts nothing
	w.begin(t0.Add(10 * time.Second))
	w.end(t0.Add(10*time.Second + 500*time.Millisecond))
	if n, d := w.read(t0.Add(time.Minute)); n != 2 || d != 3500*time.Millisecond {
		t.Fatalf("two stalls: %d, %v", n, d)
	}
}
