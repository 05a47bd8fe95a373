package engine

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/mayfly-db/mayfly/internal/memory"
	"github.com/mayfly-db/mayfly/internal/storage/pgtest"
)

// With MAYFLY_TEST_STORE=postgres the engine's tests run over PostgreSQL
// (teststore).
//
// Benchmarks run as the server does, with the C allocator advising huge
// pages (memory.ExecWithHugePages): the store's blocks and memtables come
// from it, and at 10⁶ items the block cache holds a gigabyte and a half.
// On 4 KiB pages the same cached blocks took longer to find and read at
// that size than at 10⁵ (docs/benchmarks.md, "A store whose writes
// stopped, tidied").
func TestMain(m *testing.M) {
	flag.Parse()
	if flag.Lookup("test.bench").Value.String() != "" {
		if err := memory.ExecWithHugePages(); err != nil {
			fmt.Fprintln(os.Stderr, "benchmarks without huge pages:", err)
		}
	}
	os.Exit(pgtest.Main(m))
}
