// Package memory knows how much memory this process may use, and sizes
// the Go garbage collector for a server.
package memory

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// Available is the memory this process may use in bytes: the machine's,
// or its cgroup's limit when lower; 0 if unknown.
func Available() int64 {
	mem := physicalMemory()
	if lim, ok := cgroupLimit(); ok && (mem == 0 || lim < mem) {
		mem = lim
	}
	return mem
}

// cgroupLimit reads the cgroup v2 memory limit of this process's cgroup
// ("max" means none).
func cgroupLimit() (int64, bool) {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return n, true
}

// GCPercent is the collector's target for a server: a collection when the
// heap has grown by four times what survived the last one.
//
// Almost everything a request allocates is garbage when it ends, and the
// data a server holds (the block cache, memtables) lives outside the Go
// heap, so the live heap is a few megabytes. Go's default target, twice
// the live heap but at least 4 MiB, then means dozens of collections a
// second under load, each with its fixed costs, and the runtime returning
// memory to the system only to fault it in again: a fifth of all CPU while
// a backlog of expired items drains (docs/benchmarks.md).
const GCPercent = 400

// TuneGC sets the collector for a server that keeps its data off the Go
// heap, except where the environment already does (GOGC, GOMEMLIMIT):
// GCPercent, with a soft limit of a quarter of the available memory on
// the heap, past which it collects as often as it must to stay under.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if mem := Available(); mem > 0 {
			debug.SetMemoryLimit(mem / 4)
		}
	}
}
