package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync makes f's data durable with fdatasync(2), as Pebble syncs its
// write-ahead log on Linux.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
