package pebblestore

import "testing"

// The level-0 thresholds keep the bytes a level-0 compaction merges near
// what Pebble's defaults merge with 64 MiB memtables.
func TestL0Thresholds(t *testing.T) {
	for _, tc := range []struct {
		size          uint64
		compact, stop int
	}{
		{64 << 20, 4, 12},
		{128 << 20, 4, 12},
		{32 << 20, 8, 16},
		{16 << 20, 16, 32},
		{8 << 20, 24, 48},
		{1 << 20, 24, 48},
		{0, 24, 48},
	} {
		compact, stop := l0Thresholds(tc.size)
		if compact != tc.compact || stop != tc.stop {
			t.Errorf("memtables of %d bytes: thresholds %d and %d, want %d and %d", tc.size, compact, stop, tc.compact, tc.stop)
		}
	}
}
