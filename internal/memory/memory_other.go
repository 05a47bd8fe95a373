//go:build !linux

package memory

// physicalMemory is unknown off Linux: callers fall back to their own minimums.
func physicalMemory() int64 { return 0 }

// UnmapExecutable does nothing off Linux.
func UnmapExecutable() (int64, error) { return 0, nil }
