// Package server assembles Mayfly: storage, engine, the REST transport,
// TLS, metrics and background work. The command and the tests both start
// Mayfly through it.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/h2"
	"github.com/mayfly-db/mayfly/internal/httpapi"
	"github.com/mayfly-db/mayfly/internal/ratelimit"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
	"github.com/mayfly-db/mayfly/internal/storage/pgstore"
	"github.com/mayfly-db/mayfly/internal/tlscert"
	"github.com/mayfly-db/mayfly/internal/ttl"
	"github.com/mayfly-db/mayfly/internal/ttl/ttlmetrics"
)

// EmulatorKey is the well-known Cosmos DB emulator account key, accepted by
// default so that SDK samples work unchanged.
const EmulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

// storeFilter keeps the keys the engine only iterates over out of the
// embedded store's bloom filters.
var storeFilter = &pebblestore.KeyFilter{Name: engine.IteratedOnlyRule, Skip: engine.IteratedOnly}

// Config is everything a server can be told. The zero value plus
// Validate's defaults is a working server.
type Config struct {
	// Addr is the API's listen address, default DefaultAddr (loopback
	// only); "localhost" means both 127.0.0.1 and ::1.
	Addr     string
	DataDir  string // default "./mayfly-data"
	InMemory bool   // keep everything in memory
	Keys     []string
	// ReadOnlyKeys sign reads, queries and feeds only.
	ReadOnlyKeys []string
	NoTLS        bool
	CertFile     string
	KeyFile      string
	Logger       *slog.Logger
	Clock        clock.Clock
	// Store replaces the embedded Pebble store (tests, other backends).
	Store storage.Store
	// Postgres, when set, is the connection string of a PostgreSQL-wire
	// database the server keeps its data in instead of the embedded
	// store; several servers may share it (pgstore). DataDir then holds
	// only the certificate.
	Postgres string
	// PostgresPool is the most connections to it (default 16).
	PostgresPool int
	// AccessLog logs every API request at info level (method, path,
	// status, duration, charge, activity id); otherwise at debug.
	AccessLog bool
	// DiskReserve is the free space, in bytes, writes leave on the data
	// directory's filesystem for the store's own flushes and compactions;
	// a write that would eat into it is answered 507 (0: the store's
	// default; negative: no check).
	DiskReserve int64
	// CacheSize and MemTableSize size the Pebble store's block cache and
	// its memtables in bytes; 0 means the store's defaults.
	CacheSize, MemTableSize int64
	// EraseDeadline is how long after an item expires its bytes may stay
	// in the store's files (ttl.md B4), for containers that do not set
	// their own (default ttl.DefaultEraseDeadline).
	EraseDeadline time.Duration
	// PurgeRUPerSecond is the purger's budget per container.
	PurgeRUPerSecond float64
	// Partitions is how many partition key ranges each container has.
	Partitions int
	// RequestTimeout bounds every request (default 30 s): past it the
	// request's work stops and it is answered 408. A query page evaluates
	// for at most 5 s or nine tenths of it, whichever is less (the
	// advertised maxQueryRequestTimeoutFraction), and then ends early.
	RequestTimeout time.Duration
	// Consistency is the account's default consistency level: Strong,
	// BoundedStaleness, Session (the default), ConsistentPrefix or
	// Eventual. One node serves every level as strongly as Strong.
	Consistency string
	// EnforceThroughput refuses requests over a container's provisioned
	// throughput with 429, as the emulator's rate-limiting mode does.
	EnforceThroughput bool
	// MetricsAddr is the listener for /metrics (and Go's profiles when
	// Pprof is set), apart from the API so that they need no key yet are
	// not reachable where the API is. Empty: no such listener.
	MetricsAddr string
	// MetricsOptional lets the server start without the metrics listener,
	// with a warning, when MetricsAddr is taken (the command's default
	// address, which a second server on the machine finds busy).
	MetricsOptional bool
	Pprof           bool
	// PublicURLs are the addresses clients may reach the API at, beyond
	// loopback names; the first is advertised when a request names none
	// of them (see advertise.go).
	PublicURLs []string
	// AdvertiseHost, when set, is the host advertised to clients that
	// reach the server by a loopback name, with the port they used: the
	// emulator's way of naming itself (the Go SDK's emulator tests expect
	// https://127.0.0.1:8081/ while connecting to localhost).
	AdvertiseHost string
	// ComputeAddr, when set, serves the API a second time on this address
	// as the service's compute gateway reads request paths (each segment
	// decoded once, escaped characters kept: httpapi.Config.ComputeGateway).
	ComputeAddr string
	// Timeouts bound every connection; zero fields take the defaults.
	Timeouts Timeouts
	// AAD, when its JWKS file is set, accepts Entra ID tokens signed by
	// those keys; see aad.go for what the emulator key allows.
	AAD AADConfig
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.DataDir == "" {
		c.DataDir = "./mayfly-data"
	}
	if len(c.Keys) == 0 {
		c.Keys = []string{EmulatorKey}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	switch c.Consistency {
	case "":
		c.Consistency = "Session"
	case "Strong", "BoundedStaleness", "Session", "ConsistentPrefix", "Eventual":
	default:
		return fmt.Errorf("consistency %q: use Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual", c.Consistency)
	}
	switch {
	case c.EraseDeadline == 0:
		c.EraseDeadline = ttl.DefaultEraseDeadline
	case c.EraseDeadline < ttl.MinEraseDeadline:
		return fmt.Errorf("--erase-deadline must be at least %v", ttl.MinEraseDeadline)
	}
	if c.PurgeRUPerSecond <= 0 {
		c.PurgeRUPerSecond = 10000
	}
	if c.Partitions <= 0 {
		c.Partitions = 1
	}
	switch {
	case c.RequestTimeout == 0:
		c.RequestTimeout = httpapi.DefaultRequestTimeout
	case c.RequestTimeout < 0:
		return errors.New("--request-timeout must be positive")
	}
	if c.Partitions > 64 {
		return errors.New("--partitions must be between 1 and 64")
	}
	if c.CacheSize < 0 || c.CacheSize > 1<<40 {
		return errors.New("--cache-mib must be between 0 (the default) and 1048576")
	}
	if c.MemTableSize < 0 || c.MemTableSize >= 4<<30 {
		return errors.New("--memtable-mib must be between 0 (the default) and 4095")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("--cert and --cert-key must be given together")
	}
	for _, k := range c.Keys {
		if err := checkKey(k); err != nil {
			return err
		}
	}
	for _, k := range c.ReadOnlyKeys {
		if err := checkKey(k); err != nil {
			return fmt.Errorf("read-only key: %w", err)
		}
	}
	c.Timeouts.fill()
	if err := c.AAD.check(); err != nil {
		return err
	}
	return checkPublicURLs(c.PublicURLs)
}

// Server is a running Mayfly.
type Server struct {
	cfg        Config
	store      storage.Store
	backup     func(ctx context.Context, dir string) error // nil when the store cannot be backed up
	health     *health
	ownStore   bool
	engine     *engine.Engine
	http       *http.Server
	lns        []net.Listener
	ops        *http.Server // metrics and profiles, when MetricsAddr is set
	compute    *http.Server // the compute gateway's reading of paths, when ComputeAddr is set
	computeLns []net.Listener
	opsLn      net.Listener
	warnings   []string
	tls        bool
	certPEM    []byte
	registry   *prometheus.Registry
	pg         *pgstore.Store     // the store, when it is PostgreSQL
	pebble     *pebblestore.Store // the store, when it is Pebble and opened here
	erasable   bool               // the store is a storage.Eraser
	purger     *ttl.Purger
	erasure    *ttl.Erasure
	indexer    *engine.Indexer

	done    chan struct{}
	serveMu sync.Mutex
	err     error
}

// New builds a server: it opens the store and prepares the listener's TLS
// configuration, but does not listen yet.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, done: make(chan struct{}), tls: !cfg.NoTLS}
	s.store = cfg.Store
	if s.store == nil && cfg.Postgres != "" {
		st, err := pgstore.Open(context.Background(), pgstore.Options{URL: cfg.Postgres, PoolSize: cfg.PostgresPool, Logger: cfg.Logger})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.store, s.ownStore = st, true
		s.pg = st
	}
	if s.store == nil {
		opts := pebblestore.Options{InMemory: cfg.InMemory, Logger: cfg.Logger, Filter: storeFilter, Hot: engine.Hot, Reserve: cfg.DiskReserve,
			CacheSize: cfg.CacheSize, MemTableSize: uint64(max(cfg.MemTableSize, 0))}
		if !cfg.InMemory {
			opts.Dir = filepath.Join(cfg.DataDir, "store")
		}
		st, err := pebblestore.Open(opts)
		if errors.Is(err, storage.ErrCorrupt) {
			return nil, fmt.Errorf("open store: %w\nThe data directory is damaged: restore it from a backup; mayfly check --data-dir %s reports on it in full", err, cfg.DataDir)
		}
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		s.store, s.ownStore = st, true
		s.pebble = st
	}
	// A backup is the store's own copy of itself when it can make one
	// (Pebble's checkpoint, taken beside the checks: it reads no keys), and
	// otherwise a copy of one snapshot of every key into a new Pebble
	// store (PostgreSQL).
	if !cfg.InMemory {
		store := s.store
		storeDir := ""
		if s.pebble != nil {
			storeDir = filepath.Join(cfg.DataDir, "store")
		}
		s.backup = func(ctx context.Context, dir string) error {
			if _, err := os.Stat(dir); err == nil {
				return fmt.Errorf("%s already exists; a backup goes into a new directory", dir)
			}
			if storeDir != "" && within(dir, storeDir) {
				return fmt.Errorf("%s is inside the store's own directory %s, whose files the store manages; a backup goes elsewhere", dir, storeDir)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			if cp, ok := store.(storage.Checkpointer); ok {
				return cp.Checkpoint(filepath.Join(dir, "store"))
			}
			return copySnapshot(ctx, store, filepath.Join(dir, "store"))
		}
	}
	// Built with the invariants tag, every store call is checked against
	// the storage contract; otherwise this returns the store unchanged.
	s.store = storage.WithChecks(s.store)
	var tlsCert tls.Certificate
	var err error
	switch {
	case cfg.NoTLS:
	case cfg.CertFile != "":
		tlsCert, s.certPEM, err = tlscert.FromFiles(cfg.CertFile, cfg.KeyFile)
	case cfg.InMemory:
		tlsCert, s.certPEM, err = tlscert.LoadOrCreate("", cfg.Clock.Now())
	default:
		if err = os.MkdirAll(cfg.DataDir, 0o700); err == nil {
			tlsCert, s.certPEM, err = tlscert.LoadOrCreate(cfg.DataDir, cfg.Clock.Now())
		}
	}
	if err != nil {
		s.closeStore()
		return nil, fmt.Errorf("certificate: %w", err)
	}
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.pg != nil {
		s.registry.MustRegister(pgCollectors(s.pg)...)
	}
	if s.pebble != nil {
		s.registry.MustRegister(pebbleCollectors(s.pebble)...)
	}
	s.registry.MustRegister(storeSize(s.store)...)
	s.health = &health{store: s.store}
	requests := newRequestMetrics(s.registry, cfg.Clock)
	budget := ttl.NewBudget(cfg.Clock, cfg.PurgeRUPerSecond)
	s.engine, err = engine.New(engine.Config{Store: s.store, Clock: cfg.Clock, Charges: budget, Partitions: cfg.Partitions,
		EraseDeadline: cfg.EraseDeadline, QueryPageTime: min(engine.DefaultQueryPageTime, cfg.RequestTimeout*9/10)})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	if s.pg != nil {
		s.registry.MustRegister(groupCollectors(s.engine)...)
	}
	s.indexer = s.engine.NewIndexer(cfg.Logger)
	purgeMetrics, err := ttlmetrics.New(s.registry)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.purger = ttl.New(ttl.Config{Target: s.engine, Clock: s.engine.StampClock(cfg.Clock), Budget: budget,
		Metrics: purgeMetrics, Logger: cfg.Logger})
	s.erasure = ttl.NewErasure(ttl.ErasureConfig{Target: s.engine, Clock: s.engine.StampClock(cfg.Clock), Budget: budget, Metrics: purgeMetrics, Logger: cfg.Logger})
	s.erasable = storage.CanErase(s.store)
	purgeMetrics.Erasable(s.erasable)
	authn, err := newAuthenticator(cfg)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	var limiter *ratelimit.Limiter
	if cfg.EnforceThroughput {
		limiter = ratelimit.New(cfg.Clock)
	}
	apiCfg := httpapi.Config{
		Engine: s.engine, Auth: authn, Logger: cfg.Logger, CertPEM: s.certPEM,
		RequestTimeout: cfg.RequestTimeout, Clock: cfg.Clock, Limiter: limiter, Consistency: cfg.Consistency,
		Endpoint: s.advertise, Backup: s.backup, Extra: extraRoutes(s.health, cfg.Keys), AccessLog: cfg.AccessLog,
	}
	api, err := httpapi.New(apiCfg)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.http = cfg.Timeouts.server(requests.wrap(api), cfg.Logger)
	if cfg.ComputeAddr != "" {
		apiCfg.ComputeGateway = true
		compute, err := httpapi.New(apiCfg)
		if err != nil {
			s.closeStore()
			return nil, err
		}
		s.compute = cfg.Timeouts.server(requests.wrap(compute), cfg.Logger)
	}
	if cfg.MetricsAddr != "" {
		s.ops = cfg.Timeouts.server(opsHandler(s.registry, cfg.Pprof, s.health), cfg.Logger)
	}
	if s.tls {
		tc := &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
		s.http.TLSConfig = tc
		(&h2.Server{Logger: cfg.Logger}).Configure(s.http)
		if s.compute != nil {
			s.compute.TLSConfig = tc.Clone()
			(&h2.Server{Logger: cfg.Logger}).Configure(s.compute)
		}
	}
	return s, nil
}

// Purger returns the server's TTL purger (tests drive passes with it).
func (s *Server) Purger() *ttl.Purger { return s.purger }

// Indexer returns the server's index builder (tests drive passes with it).
func (s *Server) Indexer() *engine.Indexer { return s.indexer }

// Engine returns the server's engine (for tests and tools).
func (s *Server) Engine() *engine.Engine { return s.engine }

// Start listens and serves in the background. It returns once the listener
// is open, so the server is ready when Start returns.
//
// Start logs a warning (and Warnings returns it) when the API is reachable
// from other machines with the well-known emulator key.
func (s *Server) Start() error {
	lns, err := listen(s.cfg.Addr)
	if err != nil {
		return err
	}
	if s.compute != nil {
		if s.computeLns, err = listen(s.cfg.ComputeAddr); err != nil {
			closeAll(lns)
			return fmt.Errorf("compute gateway: %w", err)
		}
	}
	if s.ops != nil {
		s.opsLn, err = net.Listen("tcp", s.cfg.MetricsAddr)
		switch {
		case err != nil && s.cfg.MetricsOptional:
			s.ops = nil
			s.warn("metrics are not served: their address is taken", "addr", s.cfg.MetricsAddr, "err", err)
		case err != nil:
			closeAll(lns)
			return fmt.Errorf("listen on %s for metrics: %w", s.cfg.MetricsAddr, err)
		}
		if s.opsLn != nil && len(exposed([]net.Listener{s.opsLn})) > 0 {
			s.warn("metrics and profiles are served without a key on a non-loopback address", "addr", s.opsLn.Addr().String())
		}
	}
	s.lns = lns
	// The compute gateway serves the same API as the main listeners.
	if out := exposed(append(slices.Clone(lns), s.computeLns...)); len(out) > 0 && hasEmulatorKey(s.cfg.Keys) {
		s.warn("the API is reachable from other machines and accepts the well-known emulator key, "+
			"so anyone who can connect can read and change all data; give --key or --key-file, "+
			"or listen on localhost", "addr", out[0])
	}
	if !s.erasable {
		s.warn("the store cannot erase deleted bytes from its files, so expired items' bytes may outlive the erasure deadline (ttl.md B4 is not met; mayfly_ttl_erasure_supported is 0)")
	}
	s.purger.Start()
	s.erasure.Start()
	s.indexer.Start()
	var wg sync.WaitGroup
	serve := func(srv *http.Server, lns []net.Listener) {
		for _, ln := range lns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if s.tls {
					err = srv.ServeTLS(ln, "", "")
				} else {
					err = srv.Serve(ln)
				}
				s.serveFailed(err)
			}()
		}
	}
	serve(s.http, lns)
	if s.compute != nil {
		serve(s.compute, s.computeLns)
	}
	if s.ops != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveFailed(s.ops.Serve(s.opsLn))
		}()
	}
	go func() {
		wg.Wait()
		close(s.done)
	}()
	return nil
}

// serveFailed records why a listener stopped serving, unless Close
// stopped it.
func (s *Server) serveFailed(err error) {
	if errors.Is(err, http.ErrServerClosed) {
		return
	}
	s.serveMu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.serveMu.Unlock()
}

func (s *Server) warn(msg string, args ...any) {
	s.cfg.Logger.Warn(msg, args...)
	s.warnings = append(s.warnings, msg)
}

// Warnings are the warnings Start logged about exposure, one sentence
// each; the command repeats them on stderr.
func (s *Server) Warnings() []string { return s.warnings }

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

// URL is the address clients use, e.g. https://127.0.0.1:8081/.
func (s *Server) URL() string {
	scheme := "https"
	if !s.tls {
		scheme = "http"
	}
	return scheme + "://" + hostPort(s.lns[0].Addr()) + "/"
}

// ComputeURL is the address of the compute gateway, or "" when there is
// none.
func (s *Server) ComputeURL() string {
	if len(s.computeLns) == 0 {
		return ""
	}
	return "https://" + hostPort(s.computeLns[0].Addr()) + "/"
}

// MetricsURL is the address of the metrics listener, e.g.
// http://127.0.0.1:9464/metrics, or "" when there is none.
func (s *Server) MetricsURL() string {
	if s.opsLn == nil {
		return ""
	}
	return "http://" + hostPort(s.opsLn.Addr()) + "/metrics"
}

// hostPort renders a listener's address for a URL; an unspecified address
// becomes localhost.
func hostPort(a net.Addr) string {
	addr := a.(*net.TCPAddr)
	host := "localhost"
	if addr.IP != nil && !addr.IP.IsUnspecified() {
		host = addr.IP.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(addr.Port))
}

// CertPEM is the server's certificate in PEM form.
func (s *Server) CertPEM() []byte { return s.certPEM }

// Done is closed when the server stops serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops accepting requests, waits for those in flight (up to ctx's
// deadline), stops background work and closes the store.
func (s *Server) Close(ctx context.Context) error {
	var errs []error
	if s.health != nil {
		s.health.closing.Store(true)
	}
	if s.lns != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		for _, srv := range []*http.Server{s.ops, s.compute} {
			if srv == nil {
				continue
			}
			if err := srv.Shutdown(ctx); err != nil {
				errs = append(errs, err)
			}
		}
		<-s.done
	}
	if err := s.purger.Close(); err != nil {
		errs = append(errs, err)
	}
	s.erasure.Stop()
	if err := s.indexer.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := s.closeStore(); err != nil {
		errs = append(errs, err)
	}
	s.serveMu.Lock()
	if s.err != nil {
		errs = append(errs, s.err)
	}
	s.serveMu.Unlock()
	return errors.Join(errs...)
}

func (s *Server) closeStore() error {
	if s.ownStore && s.store != nil {
		err := s.store.Close()
		s.store = nil
		return err
	}
	return nil
}

// within reports whether path is dir or lies under it, both made
// absolute and their links followed (resolved).
func within(path, dir string) bool {
	p, err1 := resolved(path)
	d, err2 := resolved(dir)
	if err1 != nil || err2 != nil {
		return false
	}
	return p == d || strings.HasPrefix(p, d+string(filepath.Separator))
}

// resolved is path made absolute with the symbolic links of the part of
// it that exists followed, so that a path through a link names where it
// leads.
func resolved(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(real, rest), nil
		}
		if filepath.Dir(dir) == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
