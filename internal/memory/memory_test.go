package memory

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestAvailable(t *testing.T) {
	got := Available()
	if runtime.GOOS == "linux" && got <= 0 {
		t.Fatalf("Available() = %d on Linux, want the machine's memory", got)
	}
	if lim, ok := cgroupLimit(); ok && got > lim {
		t.Fatalf("Available() = %d above the cgroup limit %d", got, lim)
	}
}

func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	for _, tc := range []struct {
		name, gogc, gomemlimit string
		wantPercent            int
		wantLimit              bool // a limit below MaxInt64 is set
	}{
		{"server defaults", "", "", GCPercent, runtime.GOOS == "linux"},
		{"GOGC set", "150", "", 100, runtime.GOOS == "linux"},
		{"GOMEMLIMIT set", "", "1GiB", GCPercent, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			TuneGC()
			// The environment is read at start-up; TuneGC leaves what it
			// set alone rather than reading it.
			if got := debug.SetGCPercent(100); got != tc.wantPercent {
				t.Errorf("GC percent %d, want %d", got, tc.wantPercent)
			}
			if got := debug.SetMemoryLimit(-1); (got < math.MaxInt64) != tc.wantLimit {
				t.Errorf("memory limit %d, want one set: %v", got, tc.wantLimit)
			}
		})
	}
}
