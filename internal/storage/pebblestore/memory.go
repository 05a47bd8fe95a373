package pebblestore

import (
	"os"
	"strconv"
	"strings"
)

// Block cache bounds. The cache is filled as blocks are read, so a large
// bound costs nothing until the data is there to fill it.
const (
	minCacheSize = 64 << 20
	maxCacheSize = 8 << 30
)

// defaultCacheSize is an eighth of the memory this process may use: the
// machine's, or its cgroup's limit when lower. A purge or a scan walks far
// more blocks than a small cache holds, and a cache that keeps evicting
// costs more CPU than the reads it serves.
func defaultCacheSize() int64 {
	mem := physicalMemory()
	if lim, ok := cgroupLimit(); ok && (mem == 0 || lim < mem) {
		mem = lim
	}
	return min(max(mem/8, minCacheSize), maxCacheSize)
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
