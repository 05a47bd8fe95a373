// Command mayfly runs the Mayfly server: the Azure Cosmos DB NoSQL REST API
// on an embedded store. Every flag can also be set with a MAYFLY_*
// environment variable (--data-dir ↔ MAYFLY_DATA_DIR); flags win.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mayfly-db/mayfly/internal/memory"
	"github.com/mayfly-db/mayfly/internal/server"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mayfly:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mayfly", flag.ContinueOnError)
	addr := fs.String("addr", ":8081", "address to listen on")
	dataDir := fs.String("data-dir", "./mayfly-data", "directory holding the data and the certificate")
	inMemory := fs.Bool("in-memory", false, "keep everything in memory; nothing survives a restart")
	key := fs.String("key", "", "account key (base64); default: the well-known emulator key")
	keyFile := fs.String("key-file", "", "file holding the account key")
	roKey := fs.String("read-only-key", "", "a read-only account key (base64): it signs reads, queries and feeds; writes signed with it get 403")
	roKeyFile := fs.String("read-only-key-file", "", "file holding the read-only account key")
	noTLS := fs.Bool("no-tls", false, "serve plain HTTP instead of HTTPS")
	cert := fs.String("cert", "", "TLS certificate file (PEM); default: a self-signed certificate kept in the data directory")
	certKey := fs.String("cert-key", "", "TLS private key file (PEM) for --cert")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	pprofAddr := fs.String("pprof-addr", "", "serve Go's net/http/pprof profiles on this address (off when empty)")
	partitions := fs.Int("partitions", 1, "partition key ranges per container (1-64)")
	reqTimeout := fs.Duration("request-timeout", 30*time.Second, "longest a request may take before it is stopped and answered 408")
	consistency := fs.String("consistency", "Session", "the account's default consistency level: Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual")
	enforce := fs.Bool("enforce-throughput", false, "refuse requests over a container's provisioned throughput with 429, as the emulator's rate-limiting mode does")
	purgeRU := fs.Float64("purge-ru-per-second", 10000, "request units per second per container the TTL purger may spend when users leave them spare")
	fs.VisitAll(func(f *flag.Flag) {
		env := "MAYFLY_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			_ = f.Value.Set(v)
		}
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !*inMemory {
		// In memory, the data itself is on the Go heap, which is then
		// anything but small; Go's default target suits it.
		memory.TuneGC()
	}
	cfg := server.Config{Addr: *addr, DataDir: *dataDir, InMemory: *inMemory, NoTLS: *noTLS,
		CertFile: *cert, KeyFile: *certKey, Logger: logger, PurgeRUPerSecond: *purgeRU, Partitions: *partitions, RequestTimeout: *reqTimeout,
		EnforceThroughput: *enforce, Consistency: *consistency}
	switch {
	case *key != "" && *keyFile != "":
		return errors.New("give --key or --key-file, not both")
	case *key != "":
		cfg.Keys = []string{*key}
	case *keyFile != "":
		b, err := os.ReadFile(*keyFile)
		if err != nil {
			return fmt.Errorf("--key-file: %w", err)
		}
		cfg.Keys = []string{strings.TrimSpace(string(b))}
	}
	switch {
	case *roKey != "" && *roKeyFile != "":
		return errors.New("give --read-only-key or --read-only-key-file, not both")
	case *roKey != "":
		cfg.ReadOnlyKeys = []string{*roKey}
	case *roKeyFile != "":
		b, err := os.ReadFile(*roKeyFile)
		if err != nil {
			return fmt.Errorf("--read-only-key-file: %w", err)
		}
		cfg.ReadOnlyKeys = []string{strings.TrimSpace(string(b))}
	}
	if *pprofAddr != "" {
		go func() {
			// The default mux carries the pprof handlers.
			if err := http.ListenAndServe(*pprofAddr, nil); err != nil {
				logger.Error("pprof listener failed", "err", err)
			}
		}()
	}
	start := time.Now()
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	logger.Info("mayfly is ready", "url", srv.URL(), "in_memory", cfg.InMemory, "data_dir", cfg.DataDir,
		"startup_ms", time.Since(start).Milliseconds())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-srv.Done():
		logger.Error("server stopped unexpectedly")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("mayfly stopped")
	return nil
}
