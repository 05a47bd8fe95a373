package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/server"
)

// TestAgainstMayfly runs every phase against an in-process Mayfly.
func TestAgainstMayfly(t *testing.T) {
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	dir := t.TempDir()
	pem := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(pem, srv.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := config{
		endpoint: srv.URL(), key: emulatorKey, caFile: pem,
		concurrency: 4, ops: 120, items: 40, partitions: 8, docSize: 100,
		database: "load", container: "items", phases: []string{"create", "read", "query"},
		outFile: filepath.Join(dir, "first.json"), label: "first",
		maxErrors: 1, requestTimeout: 10 * time.Second,
	}
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	var rep report
	data, err := os.ReadFile(cfg.outFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("%d phases in the report, want 3", len(rep.Phases))
	}
	for _, p := range rep.Phases {
		if p.Ops != cfg.ops || p.Errors != 0 || p.OpsPerSec <= 0 || p.P50Ms <= 0 || p.P99Ms < p.P50Ms {
			t.Errorf("phase %+v", p)
		}
	}

	// A run starting with reads fills the working set first, and compares
	// itself with the first run.
	cfg.phases, cfg.baselineFile, cfg.outFile, cfg.label = []string{"query"}, cfg.outFile, "", "second"
	cfg.database = "load2"
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}

	// make bench's rounds: a create phase too short to write the working
	// set keeps it, whole; a read phase finds every item there, and drops
	// the database.
	cfg.baselineFile, cfg.database = "", "rounds"
	cfg.phases, cfg.ops, cfg.keepDatabase = []string{"create"}, 5, true
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	cfg.phases, cfg.ops, cfg.keepDatabase = []string{"read"}, 200, false
	cfg.existing, cfg.dropDatabase = true, true
	cfg.outFile = filepath.Join(dir, "reads.json")
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(cfg.outFile)
	if err != nil {
		t.Fatal(err)
	}
	rep = report{}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Phases) != 1 || rep.Phases[0].Errors != 0 || rep.Phases[0].Ops != 200 {
		t.Fatalf("reads of a kept working set: %+v", rep.Phases)
	}
	if _, err := srv.Engine().ReadDatabase(context.Background(), "rounds"); err == nil {
		t.Error("the database is still there after a run with -drop")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(d, 0.50); got != 51 && got != 50 {
		t.Errorf("p50 = %v", got)
	}
	if got := percentile(d, 0.99); got != 99 {
		t.Errorf("p99 = %v", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

// TestSummarizeSkipsPhasesTheBaselineLacks: make bench sets Mayfly's full
// run against the synced floor's create phase alone, and only create may
// get a row.
func TestSummarizeSkipsPhasesTheBaselineLacks(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rep report) string {
		data, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	base := write("base.json", report{Label: "synced-floor", Phases: []phaseResult{{Phase: "create", OpsPerSec: 200}}})
	target := write("target.json", report{Label: "mayfly", Phases: []phaseResult{
		{Phase: "create", OpsPerSec: 100}, {Phase: "read", OpsPerSec: 500},
	}})
	var out strings.Builder
	if err := summarizeRounds(&out, []string{base, target}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "create") || !strings.Contains(got, "0.50") {
		t.Errorf("no create row with ratio 0.50:\n%s", got)
	}
	if strings.Contains(got, "read") {
		t.Errorf("a row for read, which the baseline did not run:\n%s", got)
	}
}
