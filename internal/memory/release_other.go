//go:build !linux || !cgo

package memory

// ReleaseFreed does nothing: without cgo the store's memory is Go's, which
// the runtime returns to the system itself.
func ReleaseFreed() {}
