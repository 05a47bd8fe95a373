//go:build !linux || !cgo

package memory

// ExecWithHugePages does nothing: without glibc's allocator (cgo on Linux)
// the store's memory is Go's.
func ExecWithHugePages() error { return nil }
