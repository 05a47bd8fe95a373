//go:build linux && cgo

package memory

/*
#include <malloc.h>
*/
import "C"

// ReleaseFreed returns to the system the pages the C allocator holds
// free. The store allocates its block cache, memtables and compaction
// buffers there, outside the Go heap; once they are freed, glibc keeps the
// pages in its per-thread arenas for reuse, and under a write load they
// held more memory than the cache itself (docs/benchmarks.md, "Memory
// under load"). A page released is faulted in again when reused, so
// callers release after bursts of frees, not after every one.
func ReleaseFreed() { C.malloc_trim(0) }
