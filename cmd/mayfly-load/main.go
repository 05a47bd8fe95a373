// Command mayfly-load drives a Cosmos DB endpoint with the official Go SDK
// (azcosmos) and reports throughput and latency.
//
// It runs N goroutines through its phases, each for a fixed time or a
// fixed number of operations:
//
//	create  CreateItem over a working set of -items ids; once every id
//	        exists, later writes to them are UpsertItem
//	read    ReadItem of a random id in the working set
//	query   SELECT * FROM c WHERE c.id = @id, scoped to the item's
//	        partition key, reading every page
//	range   SELECT * FROM c WHERE c.n > 10, scoped to a random partition
//	        key, reading every page (about items/partitions rows)
//
// and prints, per phase, operations per second and the 50th and 99th
// percentile latencies. With -out it also writes the results as JSON; with
// -baseline it adds each phase's throughput as a ratio of the baseline's,
// which is how `make bench` compares Mayfly with the floor server
// (cmd/mayfly-floor).
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

type config struct {
	endpoint, key, caFile string
	insecure, http1       bool
	concurrency, items    int
	ops                   int64
	duration              time.Duration
	database, container   string
	phases                []string
	docSize, partitions   int
	outFile, baselineFile string
	label                 string
	maxErrors             int64
	requestTimeout        time.Duration
	keepDatabase          bool
	dropDatabase          bool
	existing              bool
	serverPIDs            []int
	dbProcess             string
	metricsURLs           []string
}

func main() {
	var cfg config
	var phases string
	flag.StringVar(&cfg.endpoint, "endpoint", "https://localhost:8081/", "account endpoint; several, comma-separated, share the load (gateways over one store): goroutine i uses endpoint i mod n")
	flag.StringVar(&cfg.key, "key", emulatorKey, "account key")
	flag.StringVar(&cfg.caFile, "ca-file", "", "PEM file to trust (default: fetch /_explorer/emulator.pem from the endpoint and trust that)")
	flag.BoolVar(&cfg.insecure, "insecure", false, "skip certificate verification")
	flag.BoolVar(&cfg.http1, "http1", false, "use HTTP/1.1 instead of HTTP/2, which the SDK's own transport prefers")
	flag.IntVar(&cfg.concurrency, "concurrency", 16, "goroutines issuing requests")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "length of each phase (ignored with -ops)")
	flag.Int64Var(&cfg.ops, "ops", 0, "operations per phase instead of a duration")
	flag.IntVar(&cfg.items, "items", 10000, "ids in the working set")
	flag.IntVar(&cfg.partitions, "partitions", 64, "distinct partition key values over the working set")
	flag.IntVar(&cfg.docSize, "doc-size", 256, "approximate size of each item in bytes")
	flag.StringVar(&cfg.database, "database", "mayfly-load", "database to use (created if missing)")
	flag.StringVar(&cfg.container, "container", "items", "container to use (created if missing, partitioned on /pk)")
	flag.StringVar(&phases, "phases", "create,read,query", "phases to run, in order")
	flag.StringVar(&cfg.outFile, "out", "", "write the results as JSON to this file")
	flag.StringVar(&cfg.baselineFile, "baseline", "", "JSON results of another run to compare throughput with")
	flag.StringVar(&cfg.label, "label", "", "name of this target in the report (default: the endpoint)")
	flag.Int64Var(&cfg.maxErrors, "max-errors", 100, "stop a phase after this many failed operations")
	flag.DurationVar(&cfg.requestTimeout, "request-timeout", 30*time.Second, "time limit for each operation")
	flag.BoolVar(&cfg.keepDatabase, "keep", false, "keep the database afterwards, with the whole working set written (default: delete it if this run created it)")
	flag.BoolVar(&cfg.dropDatabase, "drop", false, "delete the database afterwards, even if an earlier run created it")
	flag.BoolVar(&cfg.existing, "existing", false, "the working set is already there (a run with -keep left it): read it without writing it first")
	serverPIDs := flag.String("server-pid", "", "process ids of the servers, comma-separated, to report their CPU time per operation (summed) and peak memory (the largest) (Linux /proc)")
	flag.StringVar(&cfg.dbProcess, "db-process", "", "name of the database's processes (e.g. postgres), to report their CPU time per operation, summed over every process of that name")
	metricsURLs := flag.String("metrics", "", "the servers' /metrics URLs, comma-separated, to report PostgreSQL round trips per operation (mayfly_postgres_round_trips_total, summed)")
	summarize := flag.Bool("summarize", false, "instead of running, print the median of each phase over the -out files given as arguments: baseline and target alternating, baseline first; each pair holds a round's phases, all or some")
	flag.Parse()
	if *summarize {
		if err := summarizeRounds(os.Stdout, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, "mayfly-load:", err)
			os.Exit(1)
		}
		return
	}
	cfg.phases = strings.Split(phases, ",")
	for _, f := range strings.FieldsFunc(*serverPIDs, func(r rune) bool { return r == ',' }) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mayfly-load: -server-pid:", err)
			os.Exit(2)
		}
		cfg.serverPIDs = append(cfg.serverPIDs, pid)
	}
	cfg.metricsURLs = strings.FieldsFunc(*metricsURLs, func(r rune) bool { return r == ',' })
	if cfg.label == "" {
		cfg.label = cfg.endpoint
	}

	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "mayfly-load:", err)
		os.Exit(1)
	}
}

// phaseResult is one phase's measurements; it is also the JSON format of
// -out and -baseline.
type phaseResult struct {
	Phase     string  `json:"phase"`
	Ops       int64   `json:"ops"`
	Errors    int64   `json:"errors"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// ServerCPUUs is the server's CPU time (user and system) per
	// operation in microseconds, and ServerPeakKB its peak resident
	// memory so far, when -server-pid is given.
	ServerCPUUs  float64 `json:"server_cpu_us_per_op,omitempty"`
	ServerPeakKB int64   `json:"server_peak_kb,omitempty"`
	// DBCPUUs is the CPU time per operation of the database's processes
	// (-db-process), and RoundTrips the PostgreSQL round trips per
	// operation the servers counted (-metrics), background work included.
	DBCPUUs    float64 `json:"db_cpu_us_per_op,omitempty"`
	RoundTrips float64 `json:"round_trips_per_op,omitempty"`
	FirstErr   string  `json:"first_error,omitempty"`
}

type report struct {
	Label       string        `json:"label"`
	Endpoint    string        `json:"endpoint"`
	Concurrency int           `json:"concurrency"`
	Phases      []phaseResult `json:"phases"`
}

func run(ctx context.Context, cfg config) error {
	for _, p := range cfg.phases {
		if _, ok := phaseOps[p]; !ok {
			return fmt.Errorf("unknown phase %q (want create, read, query or range)", p)
		}
	}
	if cfg.concurrency < 1 || cfg.items < 1 || cfg.partitions < 1 {
		return errors.New("-concurrency, -items and -partitions must be positive")
	}
	var baseline *report
	if cfg.baselineFile != "" {
		data, err := os.ReadFile(cfg.baselineFile)
		if err != nil {
			return err
		}
		baseline = new(report)
		if err := json.Unmarshal(data, baseline); err != nil {
			return fmt.Errorf("%s: %w", cfg.baselineFile, err)
		}
	}

	httpClient, err := newHTTPClient(ctx, cfg)
	if err != nil {
		return err
	}
	cred, err := azcosmos.NewKeyCredential(cfg.key)
	if err != nil {
		return fmt.Errorf("key: %w", err)
	}
	var containers []*azcosmos.ContainerClient
	for i, endpoint := range strings.Split(cfg.endpoint, ",") {
		client, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{
			ClientOptions: azcore.ClientOptions{Transport: httpClient},
		})
		if err != nil {
			return err
		}
		if i == 0 {
			c, cleanup, err := setUp(ctx, client, cfg)
			if err != nil {
				return err
			}
			defer cleanup()
			containers = append(containers, c)
			continue
		}
		c, err := client.NewContainer(cfg.database, cfg.container)
		if err != nil {
			return err
		}
		containers = append(containers, c)
	}

	w := &workload{cfg: cfg, containers: containers, payload: strings.Repeat("x", max(cfg.docSize-60, 0))}
	if cfg.existing {
		w.written.Store(int64(cfg.items))
	}
	rep := report{Label: cfg.label, Endpoint: cfg.endpoint, Concurrency: cfg.concurrency}
	for _, p := range cfg.phases {
		if p != "create" && w.existing() == 0 {
			// Nothing to read yet: fill the working set first, untimed.
			if _, err := w.fill(ctx); err != nil {
				return err
			}
		}
		cpu0, _ := processesCPU(cfg.serverPIDs)
		db0 := namedCPU(cfg.dbProcess)
		rt0, _ := roundTrips(ctx, httpClient, cfg.metricsURLs)
		res := w.runPhase(ctx, p)
		if cpu1, ok := processesCPU(cfg.serverPIDs); ok && res.Ops > 0 {
			res.ServerCPUUs = float64(cpu1-cpu0) / float64(time.Microsecond) / float64(res.Ops)
			for _, pid := range cfg.serverPIDs {
				res.ServerPeakKB = max(res.ServerPeakKB, peakRSS(pid))
			}
		}
		if cfg.dbProcess != "" && res.Ops > 0 {
			res.DBCPUUs = float64(cpuSince(db0, namedCPU(cfg.dbProcess))) / float64(time.Microsecond) / float64(res.Ops)
		}
		if rt1, ok := roundTrips(ctx, httpClient, cfg.metricsURLs); ok && res.Ops > 0 {
			res.RoundTrips = (rt1 - rt0) / float64(res.Ops)
		}
		rep.Phases = append(rep.Phases, res)
		fmt.Fprintf(os.Stderr, "%s: %s %.0f ops/s\n", cfg.label, p, res.OpsPerSec)
	}
	if cfg.keepDatabase && !cfg.dropDatabase && w.existing() < int64(cfg.items) {
		// Leave the working set whole for a later run with -existing.
		if _, err := w.fill(ctx); err != nil {
			return err
		}
	}
	printReport(os.Stdout, rep, baseline)

	if cfg.outFile != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(cfg.outFile, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	for _, r := range rep.Phases {
		if r.Errors > 0 {
			return fmt.Errorf("%s phase: %d operations failed; first: %s", r.Phase, r.Errors, r.FirstErr)
		}
	}
	return nil
}

// newHTTPClient mirrors the SDK's default transport (HTTP/2, many idle
// connections) but trusts the server's own certificate.
func newHTTPClient(ctx context.Context, cfg config) (*http.Client, error) {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case cfg.insecure:
		tlsConfig.InsecureSkipVerify = true
	default:
		pem, err := serverCertificate(ctx, cfg)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, errors.New("no certificate in the PEM to trust")
		}
		tlsConfig.RootCAs = pool
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     !cfg.http1,
		MaxIdleConns:          1000,
		MaxIdleConnsPerHost:   max(100, cfg.concurrency),
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		TLSClientConfig:       tlsConfig,
	}
	if cfg.http1 {
		transport.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: transport, Timeout: cfg.requestTimeout}, nil
}

func serverCertificate(ctx context.Context, cfg config) ([]byte, error) {
	if cfg.caFile != "" {
		return os.ReadFile(cfg.caFile)
	}
	u, err := url.JoinPath(strings.Split(cfg.endpoint, ",")[0], "/_explorer/emulator.pem")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	// Trust on first use: the PEM itself is fetched without verification.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the server certificate: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the server certificate: %s: %s", resp.Status, body)
	}
	return body, nil
}

// setUp creates the database and container when missing and returns a
// cleanup that deletes the database if this run created it.
func setUp(ctx context.Context, client *azcosmos.Client, cfg config) (*azcosmos.ContainerClient, func(), error) {
	created := false
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: cfg.database}, nil); err == nil {
		created = true
	} else if !isStatus(err, http.StatusConflict) {
		return nil, nil, fmt.Errorf("create database %s: %w", cfg.database, err)
	}
	db, err := client.NewDatabase(cfg.database)
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {
		if cfg.dropDatabase || created && !cfg.keepDatabase {
			if _, err := db.Delete(context.Background(), nil); err != nil {
				fmt.Fprintln(os.Stderr, "mayfly-load: delete database:", err)
			}
		}
	}
	props := azcosmos.ContainerProperties{
		ID:                     cfg.container,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}, Kind: azcosmos.PartitionKeyKindHash, Version: 2},
	}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil && !isStatus(err, http.StatusConflict) {
		cleanup()
		return nil, nil, fmt.Errorf("create container %s: %w", cfg.container, err)
	}
	container, err := db.NewContainer(cfg.container)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return container, cleanup, nil
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

// workload holds what the phases share: the container and how much of the
// working set exists.
type workload struct {
	cfg        config
	containers []*azcosmos.ContainerClient // one per endpoint
	payload    string
	written    atomic.Int64 // ids item-0 … item-(written-1) exist, capped at items
}

func (w *workload) existing() int64 { return min(w.written.Load(), int64(w.cfg.items)) }

func (w *workload) id(n int64) string { return fmt.Sprintf("item-%d", n) }

func (w *workload) pk(n int64) string { return fmt.Sprintf("pk-%d", n%int64(w.cfg.partitions)) }

type document struct {
	ID      string `json:"id"`
	PK      string `json:"pk"`
	N       int64  `json:"n"`
	Payload string `json:"payload"`
}

var phaseOps = map[string]func(w *workload, ctx context.Context, seq int64, rng *rand.Rand) error{
	"create": (*workload).write,
	"read":   (*workload).read,
	"query":  (*workload).query,
	"range":  (*workload).rangeQuery,
}

// write creates item seq%items on the first pass over the working set and
// upserts it afterwards.
func (w *workload) write(ctx context.Context, seq int64, _ *rand.Rand) error {
	n := seq % int64(w.cfg.items)
	doc, err := json.Marshal(document{ID: w.id(n), PK: w.pk(n), N: seq, Payload: w.payload})
	if err != nil {
		return err
	}
	pk := azcosmos.NewPartitionKeyString(w.pk(n))
	c := w.on(seq)
	if seq < int64(w.cfg.items) {
		_, err = c.CreateItem(ctx, pk, doc, nil)
		// A rerun with -keep finds the item already there.
		if isStatus(err, http.StatusConflict) {
			_, err = c.UpsertItem(ctx, pk, doc, nil)
		}
	} else {
		_, err = c.UpsertItem(ctx, pk, doc, nil)
	}
	if err == nil {
		// Items are written in order per worker but not overall; count
		// the highest id known to exist conservatively.
		for {
			cur := w.written.Load()
			if seq+1 <= cur || w.written.CompareAndSwap(cur, seq+1) {
				break
			}
		}
	}
	return err
}

// on returns the container client of the endpoint operation seq goes to.
func (w *workload) on(seq int64) *azcosmos.ContainerClient {
	return w.containers[seq%int64(len(w.containers))]
}

func (w *workload) read(ctx context.Context, seq int64, rng *rand.Rand) error {
	n := rng.Int64N(w.existing())
	resp, err := w.on(seq).ReadItem(ctx, azcosmos.NewPartitionKeyString(w.pk(n)), w.id(n), nil)
	if err != nil {
		return err
	}
	var doc document
	if err := json.Unmarshal(resp.Value, &doc); err != nil {
		return fmt.Errorf("read %s: %w", w.id(n), err)
	}
	if doc.ID != w.id(n) {
		return fmt.Errorf("read %s: got item %q", w.id(n), doc.ID)
	}
	return nil
}

func (w *workload) query(ctx context.Context, seq int64, rng *rand.Rand) error {
	n := rng.Int64N(w.existing())
	found, err := w.drain(ctx, w.on(seq), "SELECT * FROM c WHERE c.id = @id", w.pk(n), azcosmos.QueryParameter{Name: "@id", Value: w.id(n)})
	if err == nil && found != 1 {
		err = fmt.Errorf("query for %s: %d items, want 1", w.id(n), found)
	}
	return err
}

// rangeQuery reads every page of a filter on another property than the
// partition key, scoped to one logical partition: the shape whose cost
// must follow the partition, not the container.
func (w *workload) rangeQuery(ctx context.Context, seq int64, rng *rand.Rand) error {
	pk := w.pk(rng.Int64N(int64(w.cfg.partitions)))
	found, err := w.drain(ctx, w.on(seq), "SELECT * FROM c WHERE c.n > @min", pk, azcosmos.QueryParameter{Name: "@min", Value: 10})
	if err == nil && found == 0 {
		err = fmt.Errorf("range query in %s: no items", pk)
	}
	return err
}

// drain runs a query scoped to partition key pk, reads every page and
// returns how many items came back.
func (w *workload) drain(ctx context.Context, c *azcosmos.ContainerClient, query, pk string, params ...azcosmos.QueryParameter) (int, error) {
	pager := c.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString(pk),
		&azcosmos.QueryOptions{QueryParameters: params})
	found := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return found, err
		}
		found += len(page.Items)
	}
	return found, nil
}

// fill writes the whole working set once, untimed, for runs that start
// with a read or query phase.
func (w *workload) fill(ctx context.Context) (phaseResult, error) {
	cfg := w.cfg
	cfg.ops, cfg.duration = int64(cfg.items), 0
	res := (&workload{cfg: cfg, containers: w.containers, payload: w.payload}).runPhaseWith(ctx, "create", w)
	if res.Errors > 0 {
		return res, fmt.Errorf("fill the working set: %s", res.FirstErr)
	}
	return res, nil
}

func (w *workload) runPhase(ctx context.Context, phase string) phaseResult {
	return w.runPhaseWith(ctx, phase, w)
}

// runPhaseWith runs one phase with the limits of w.cfg, recording writes in
// target (which differs from w only while filling).
func (w *workload) runPhaseWith(ctx context.Context, phase string, target *workload) phaseResult {
	op := phaseOps[phase]
	var (
		seq, errs atomic.Int64
		firstErr  atomic.Pointer[string]
		wg        sync.WaitGroup
		latencies = make([][]time.Duration, w.cfg.concurrency)
	)
	deadline := time.Time{}
	if w.cfg.ops <= 0 {
		deadline = time.Now().Add(w.cfg.duration)
	}
	start := time.Now()
	for g := range w.cfg.concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))
			lat := make([]time.Duration, 0, 1024)
			for {
				if !deadline.IsZero() && time.Now().After(deadline) {
					break
				}
				s := seq.Add(1) - 1
				if w.cfg.ops > 0 && s >= w.cfg.ops {
					break
				}
				if errs.Load() >= w.cfg.maxErrors {
					break
				}
				opCtx, cancel := context.WithTimeout(ctx, w.cfg.requestTimeout)
				t0 := time.Now()
				err := op(target, opCtx, s, rng)
				d := time.Since(t0)
				cancel()
				if err != nil {
					errs.Add(1)
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
					continue
				}
				lat = append(lat, d)
			}
			latencies[g] = lat
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	all := slices.Concat(latencies...)
	slices.Sort(all)
	res := phaseResult{
		Phase:   phase,
		Ops:     int64(len(all)),
		Errors:  errs.Load(),
		Seconds: elapsed.Seconds(),
		P50Ms:   percentile(all, 0.50),
		P99Ms:   percentile(all, 0.99),
	}
	if elapsed > 0 {
		res.OpsPerSec = float64(len(all)) / elapsed.Seconds()
	}
	if p := firstErr.Load(); p != nil {
		res.FirstErr = firstLine(*p)
	}
	return res
}

func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted)-1) + 0.5)
	return float64(sorted[i]) / float64(time.Millisecond)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func printReport(out io.Writer, rep report, baseline *report) {
	fmt.Fprintf(out, "\n%s (%d goroutines)\n", rep.Label, rep.Concurrency)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "phase\tops\terrors\tops/s\tp50 ms\tp99 ms\t"
	if baseline != nil {
		header += baseline.Label + " ops/s\tratio\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rep.Phases {
		line := fmt.Sprintf("%s\t%d\t%d\t%.0f\t%.2f\t%.2f\t", r.Phase, r.Ops, r.Errors, r.OpsPerSec, r.P50Ms, r.P99Ms)
		if baseline != nil {
			i := slices.IndexFunc(baseline.Phases, func(b phaseResult) bool { return b.Phase == r.Phase })
			if i >= 0 && baseline.Phases[i].OpsPerSec > 0 {
				b := baseline.Phases[i].OpsPerSec
				line += fmt.Sprintf("%.0f\t%.2f\t", b, r.OpsPerSec/b)
			} else {
				line += "-\t-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	for _, r := range rep.Phases {
		if r.FirstErr != "" {
			fmt.Fprintf(out, "%s: %d errors; first: %s\n", r.Phase, r.Errors, r.FirstErr)
		}
	}
}

// processesCPU is the CPU time the processes pids have used, summed.
func processesCPU(pids []int) (time.Duration, bool) {
	var sum time.Duration
	for _, pid := range pids {
		d, ok := processCPU(pid)
		if !ok {
			return 0, false
		}
		sum += d
	}
	return sum, len(pids) > 0
}

// namedCPU is the CPU time used so far by each process named name (its
// command name in /proc/<pid>/stat), by pid.
func namedCPU(name string) map[int]time.Duration {
	if name == "" {
		return nil
	}
	out := map[int]time.Duration{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || !strings.Contains(string(b), "("+name+")") {
			continue
		}
		if cpu, ok := processCPU(pid); ok {
			out[pid] = cpu
		}
	}
	return out
}

// cpuSince is the CPU time the processes of after used since before; a
// process new in after counts from zero. (A process that ended between
// the two is not counted: the database's connections live through a
// phase.)
func cpuSince(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, cpu := range after {
		d += cpu - before[pid]
	}
	return d
}

// roundTrips sums mayfly_postgres_round_trips_total over the servers'
// /metrics.
func roundTrips(ctx context.Context, hc *http.Client, urls []string) (float64, bool) {
	if len(urls) == 0 {
		return 0, false
	}
	sum := 0.0
	for _, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, false
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, false
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, false
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "mayfly_postgres_round_trips_total "); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				sum += f
			}
		}
	}
	return sum, true
}

// processCPU is the user and system CPU time process pid has used, from
// /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s).
func processCPU(pid int) (time.Duration, bool) {
	if pid <= 0 {
		return 0, false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces; fields are counted after it.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	var utime, stime int64
	fmt.Sscan(f[11], &utime)
	fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// peakRSS is process pid's peak resident memory in KiB (VmHWM), or 0.
func peakRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			return kb
		}
	}
	return 0
}

// summarizeRounds prints, for each phase, the median over rounds of the
// target's throughput as a ratio of the baseline's in the same round, and
// of the server CPU per operation likewise. files alternate baseline,
// target, baseline, target, …; a pair may hold every phase of a round or
// one (make bench runs each phase against both servers before the next), and
// each phase is summarized over the pairs that hold it.
func summarizeRounds(out io.Writer, files []string) error {
	if len(files) < 2 || len(files)%2 != 0 {
		return errors.New("-summarize needs baseline and target files in pairs")
	}
	var reps []report
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		reps = append(reps, r)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		if len(xs) == 0 {
			return 0
		}
		if len(xs)%2 == 1 {
			return xs[len(xs)/2]
		}
		return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	fmt.Fprintf(out, "\n%s against %s (median of each round's ratio)\n", reps[1].Label, reps[0].Label)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tops/s\tbaseline ops/s\tratio\trounds\tcpu us/op\tbaseline cpu us/op\tcpu ratio\tpeak MiB\tdb cpu us/op\tbaseline db cpu us/op\tround trips/op\t")
	var phases []string
	for i := 1; i < len(reps); i += 2 {
		for _, p := range reps[i].Phases {
			if !slices.Contains(phases, p.Phase) {
				phases = append(phases, p.Phase)
			}
		}
	}
	for _, phase := range phases {
		var ops, bops, ratios, cpu, bcpu, cratios, dbcpu, bdbcpu, trips []float64
		peak := int64(0)
		for i := 0; i+1 < len(reps); i += 2 {
			b, t := reps[i], reps[i+1]
			bi := slices.IndexFunc(b.Phases, func(p phaseResult) bool { return p.Phase == phase })
			ti := slices.IndexFunc(t.Phases, func(p phaseResult) bool { return p.Phase == phase })
			if bi < 0 || ti < 0 || b.Phases[bi].OpsPerSec == 0 {
				continue
			}
			bp, tp := b.Phases[bi], t.Phases[ti]
			ops, bops = append(ops, tp.OpsPerSec), append(bops, bp.OpsPerSec)
			ratios = append(ratios, tp.OpsPerSec/bp.OpsPerSec)
			if bp.ServerCPUUs > 0 && tp.ServerCPUUs > 0 {
				cpu, bcpu = append(cpu, tp.ServerCPUUs), append(bcpu, bp.ServerCPUUs)
				cratios = append(cratios, tp.ServerCPUUs/bp.ServerCPUUs)
			}
			peak = max(peak, tp.ServerPeakKB)
			dbcpu, bdbcpu = append(dbcpu, tp.DBCPUUs), append(bdbcpu, bp.DBCPUUs)
			trips = append(trips, tp.RoundTrips)
		}
		if len(ratios) == 0 {
			continue // a phase the baseline did not run
		}
		ratioList := make([]string, len(ratios))
		for i, r := range ratios {
			ratioList[i] = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2f\t%s\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.0f\t%.2f\t\n", phase, median(ops), median(bops),
			median(slices.Clone(ratios)), strings.Join(ratioList, " "), median(cpu), median(bcpu), median(cratios), float64(peak)/1024,
			median(dbcpu), median(bdbcpu), median(trips))
	}
	return tw.Flush()
}
