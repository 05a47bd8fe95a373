package script

import (
	"context"
	"testing"
)

// BenchmarkEmptyProcedure is what running a script costs before it does
// anything: a runtime, its globals and the guards (docs/benchmarks.md,
// "Server-side scripts").
func BenchmarkEmptyProcedure(b *testing.B) {
	m := &memColl{docs: map[string][]byte{}}
	ctx := context.Background()
	for b.Loop() {
		if _, err := RunProcedure(ctx, `function () {}`, nil, m, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}
