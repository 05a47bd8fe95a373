//go:build !linux

package main

import "os"

// datasync makes f's data durable; without fdatasync(2), with fsync.
func datasync(f *os.File) error { return f.Sync() }
