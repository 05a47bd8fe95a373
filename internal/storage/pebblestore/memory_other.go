//go:build !linux

package pebblestore

// physicalMemory is unknown off Linux: the cache takes its minimum.
func physicalMemory() int64 { return 0 }
