//go:build !linux

package memory

// physicalMemory is unknown off Linux: callers fall back to their own minimums.
func physicalMemory() int64 { return 0 }
