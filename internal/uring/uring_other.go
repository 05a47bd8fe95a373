//go:build !linux

package uring

import "errors"

// Ring is an io_uring instance; there is none outside Linux.
type Ring struct{}

// Open fails: io_uring is Linux's.
func Open() (*Ring, error) { return nil, errors.New("io_uring is available on Linux only") }

// Datasync is never reached: Open returns no Ring.
func (*Ring) Datasync(uintptr) error { return errors.ErrUnsupported }

// Synced is 0.
func (*Ring) Synced() int64 { return 0 }

// Close does nothing.
func (*Ring) Close() error { return nil }
