package pebblestore

import (
	"errors"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// checkSpace reads the free space once per spaceRecheck while it is far
// above the reserve, and on every write once it is not.
func TestCheckSpaceTrustsAGenerousReading(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clk := clock.NewManual(time.Unix(1_700_000_000, 0))
	s.clock = clk
	reads, free := 0, uint64(s.reserve)+spaceSlack
	s.freeSpace = func() (uint64, error) { reads++; return free, nil }
	check := func(wantReads int, wantErr error) {
		t.Helper()
		if err := s.checkSpace(false); !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("checkSpace: %v, want %v", err, wantErr)
		}
		if reads != wantReads {
			t.Fatalf("%d readings of the free space, want %d", reads, wantReads)
		}
	}
	check(1, nil)
	check(1, nil)
	clk.Advance(spaceRecheck)
	check(2, nil)
	// Below the slack every write reads again, and sees the disk fill.
	free = uint64(s.reserve) + spaceSlack - 1
	clk.Advance(spaceRecheck)
	check(3, nil)
	check(4, nil)
	free = uint64(s.reserve) - 1
	check(5, storage.ErrNoSpace)
}
