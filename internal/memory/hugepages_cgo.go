//go:build linux && cgo

package memory

/*
#include <stdlib.h>
#include <string.h>

static void *allocTouched(size_t n) {
	void *p = malloc(n);
	if (p != NULL) memset(p, 1, n);
	return p;
}
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// ExecWithHugePages runs this program again, in place (the same process
// and arguments), with glibc's allocator advising transparent huge pages
// for its large mappings, unless the environment or the kernel's setting
// says otherwise (hugePageEnv). It returns only when it does not: nil if
// there was nothing to do, or why the exec failed.
//
// The store allocates its memtables with the C allocator: arenas of many
// MiB (16 by default) that every write searches and inserts into, at
// random places. On 4 KiB pages each step of those searches can miss the
// TLB, and every new page is a fault; with huge pages a create costs
// about a tenth less CPU (docs/benchmarks.md, "Huge pages for the
// memtables"). The allocator reads the tunable only as the process starts,
// so it cannot be set from here but by starting again.
func ExecWithHugePages() error {
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return nil // no transparent huge pages in this kernel
	}
	env, changed := hugePageEnv(os.Environ(), string(thp))
	if !changed {
		return nil
	}
	exe := executable()
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		return fmt.Errorf("exec %s: %w", exe, err)
	}
	return nil // not reached: a successful exec does not return
}

// executable is the path of the running program's file: by its path rather
// than /proc/self/exe, which would rename the process "exe" (ps, top and
// pgrep go by the name executed), unless that path now holds another file.
func executable() string {
	const self = "/proc/self/exe"
	exe, err := os.Executable()
	if err != nil {
		return self
	}
	running, err1 := os.Stat(self)
	named, err2 := os.Stat(exe)
	if err1 != nil || err2 != nil || !os.SameFile(running, named) {
		return self
	}
	return exe
}

// cAllocTouched allocates n bytes with the C allocator and writes them, as
// the store's memtables are; the tests see where the pages came from.
func cAllocTouched(n int) (free func()) {
	p := C.allocTouched(C.size_t(n))
	return func() { C.free(unsafe.Pointer(p)) }
}
