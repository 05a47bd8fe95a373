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
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/httpapi"
	"github.com/mayfly-db/mayfly/internal/storage"
	"github.com/mayfly-db/mayfly/internal/storage/pebblestore"
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
	Addr     string // listen address, default ":8081"
	DataDir  string // default "./mayfly-data"
	InMemory bool   // keep everything in memory
	Keys     []string
	NoTLS    bool
	CertFile string
	KeyFile  string
	Logger   *slog.Logger
	Clock    clock.Clock
	// Store replaces the embedded Pebble store (tests, other backends).
	Store storage.Store
	// PurgeRUPerSecond is the purger's budget per container.
	PurgeRUPerSecond float64
	// Partitions is how many partition key ranges each container has.
	Partitions int
}

// Validate fills defaults and checks the configuration.
func (c *Config) Validate() error {
	if c.Addr == "" {
		c.Addr = ":8081"
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
	if c.PurgeRUPerSecond <= 0 {
		c.PurgeRUPerSecond = 10000
	}
	if c.Partitions <= 0 {
		c.Partitions = 1
	}
	if c.Partitions > 64 {
		return errors.New("--partitions must be between 1 and 64")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return errors.New("--cert and --cert-key must be given together")
	}
	for _, k := range c.Keys {
		if err := checkKey(k); err != nil {
			return err
		}
	}
	return nil
}

// Server is a running Mayfly.
type Server struct {
	cfg      Config
	store    storage.Store
	ownStore bool
	engine   *engine.Engine
	http     *http.Server
	ln       net.Listener
	tls      bool
	certPEM  []byte
	registry *prometheus.Registry
	purger   *ttl.Purger
	indexer  *engine.Indexer

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
	if s.store == nil {
		opts := pebblestore.Options{InMemory: cfg.InMemory, Logger: cfg.Logger, Filter: storeFilter}
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
	}
	var tlsCert tls.Certificate
	var err error
	switch {
	case cfg.NoTLS:
	case cfg.CertFile != "":
		tlsCert, s.certPEM, err = tlscert.FromFiles(cfg.CertFile, cfg.KeyFile)
	case cfg.InMemory:
		tlsCert, s.certPEM, err = tlscert.LoadOrCreate("")
	default:
		if err = os.MkdirAll(cfg.DataDir, 0o755); err == nil {
			tlsCert, s.certPEM, err = tlscert.LoadOrCreate(cfg.DataDir)
		}
	}
	if err != nil {
		s.closeStore()
		return nil, fmt.Errorf("certificate: %w", err)
	}
	s.registry = prometheus.NewRegistry()
	s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	budget := ttl.NewBudget(cfg.Clock, cfg.PurgeRUPerSecond)
	s.engine, err = engine.New(engine.Config{Store: s.store, Clock: cfg.Clock, Charges: budget, Partitions: cfg.Partitions})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.indexer = s.engine.NewIndexer(cfg.Logger)
	purgeMetrics, err := ttlmetrics.New(s.registry)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.purger = ttl.New(ttl.Config{Target: s.engine, Clock: cfg.Clock, Budget: budget,
		Metrics: purgeMetrics, Logger: cfg.Logger})
	authn, err := newAuthenticator(cfg.Keys)
	if err != nil {
		s.closeStore()
		return nil, err
	}
	api, err := httpapi.New(httpapi.Config{
		Engine: s.engine, Auth: authn, Logger: cfg.Logger, CertPEM: s.certPEM,
		Extra: map[string]http.Handler{"/metrics": promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{})},
	})
	if err != nil {
		s.closeStore()
		return nil, err
	}
	s.http = &http.Server{Handler: api, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute,
		ErrorLog: slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug)}
	if s.tls {
		s.http.TLSConfig = &tls.Config{Certificates: []tls.Certificate{tlsCert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
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
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.purger.Start()
	s.indexer.Start()
	go func() {
		defer close(s.done)
		var err error
		if s.tls {
			err = s.http.ServeTLS(ln, "", "")
		} else {
			err = s.http.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			s.serveMu.Lock()
			s.err = err
			s.serveMu.Unlock()
		}
	}()
	return nil
}

// URL is the address clients use, e.g. https://127.0.0.1:8081/.
func (s *Server) URL() string {
	scheme := "https"
	if !s.tls {
		scheme = "http"
	}
	addr := s.ln.Addr().(*net.TCPAddr)
	host := "localhost"
	if addr.IP != nil && !addr.IP.IsUnspecified() {
		host = addr.IP.String()
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return fmt.Sprintf("%s://%s:%d/", scheme, host, addr.Port)
}

// CertPEM is the server's certificate in PEM form.
func (s *Server) CertPEM() []byte { return s.certPEM }

// Done is closed when the server stops serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops accepting requests, waits for those in flight (up to ctx's
// deadline), stops background work and closes the store.
func (s *Server) Close(ctx context.Context) error {
	var errs []error
	if s.ln != nil {
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		<-s.done
	}
	if err := s.purger.Close(); err != nil {
		errs = append(errs, err)
	}
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
