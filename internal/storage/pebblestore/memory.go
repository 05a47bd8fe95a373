package pebblestore

import "github.com/mayfly-db/mayfly/internal/memory"

// Block cache bounds. The cache is filled as blocks are read, so a large
// bound costs nothing until the data is there to fill it.
const (
	minCacheSize = 64 << 20
	maxCacheSize = 8 << 30
)

// defaultCacheSize is an eighth of the memory this process may use. A purge
// or a scan walks far more blocks than a small cache holds, and a cache
// that keeps evicting costs more CPU than the reads it serves.
func defaultCacheSize() int64 {
	return min(max(memory.Available()/8, minCacheSize), maxCacheSize)
}
