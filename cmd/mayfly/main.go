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
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/memory"
	"github.com/mayfly-db/mayfly/internal/server"
	"github.com/mayfly-db/mayfly/internal/transfer"
	"github.com/mayfly-db/mayfly/internal/ttl"
)

func main() {
	err := run(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		// -h or --help: the usage is printed, as asked.
		return
	}
	if err != nil {
		// A command's errors name it already ("mayfly export: …").
		msg := err.Error()
		if !strings.HasPrefix(msg, "mayfly") {
			msg = "mayfly: " + msg
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "check":
			return check(args[1:])
		case "backup":
			return backup(args[1:])
		case "restore":
			return restore(args[1:])
		case "export":
			return export(args[1:])
		case "import":
			return importDump(args[1:])
		case "version":
			fmt.Println(version())
			return nil
		}
	}
	fs := flag.NewFlagSet("mayfly", flag.ContinueOnError)
	addr := fs.String("addr", server.DefaultAddr, "address to listen on; localhost means 127.0.0.1 and ::1, \":8081\" every interface")
	dataDir := fs.String("data-dir", "./mayfly-data", "directory holding the data and the certificate")
	inMemory := fs.Bool("in-memory", false, "keep everything in memory; nothing survives a restart")
	postgres := fs.String("postgres", "", "keep the data in this PostgreSQL-wire database (a connection string, postgres://user@host:port/db); several gateways may share it; --data-dir then holds only the certificate")
	postgresPool := fs.Int("postgres-pool", 16, "the most connections to --postgres")
	key := fs.String("key", "", "account key (base64); default: the well-known emulator key")
	keyFile := fs.String("key-file", "", "file holding the account key")
	roKey := fs.String("read-only-key", "", "a read-only account key (base64): it signs reads, queries and feeds; writes signed with it get 401")
	roKeyFile := fs.String("read-only-key-file", "", "file holding the read-only account key")
	noTLS := fs.Bool("no-tls", false, "serve plain HTTP instead of HTTPS")
	cert := fs.String("cert", "", "TLS certificate file (PEM); default: a self-signed certificate kept in the data directory")
	certKey := fs.String("cert-key", "", "TLS private key file (PEM) for --cert")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	accessLog := fs.Bool("access-log", false, "log every API request (method, path, status, duration, charge, activity id) at info level")
	metricsAddr := fs.String("metrics-addr", "127.0.0.1:9464", "address serving /metrics (and --pprof), without a key; \"off\" for none")
	pprof := fs.Bool("pprof", false, "also serve Go's profiles at /debug/pprof/ on --metrics-addr")
	advertiseHost := fs.String("advertise-host", "", "the host advertised to clients that connect by a loopback name, e.g. 127.0.0.1 (the emulator's tests expect it)")
	computeAddr := fs.String("compute-addr", "", "also serve the API on this address as the service's compute gateway reads paths (the emulator uses localhost:8903)")
	publicURL := fs.String("public-url", "", "comma-separated URLs clients reach the server at from other machines, e.g. https://db.example:8081/; the first is advertised to clients that name none")
	aadJWKS := fs.String("aad-jwks-file", "", "accept Entra ID (AAD) tokens signed by the keys in this JSON Web Key Set file; needs --aad-issuer and --aad-audience")
	aadIssuer := fs.String("aad-issuer", "", "the iss claim AAD tokens must carry")
	aadAudience := fs.String("aad-audience", "", "the aud claim AAD tokens must carry")
	readHeaderTimeout := fs.Duration("read-header-timeout", server.DefaultReadHeaderTimeout, "longest time to read a request's headers")
	readTimeout := fs.Duration("read-timeout", server.DefaultReadTimeout, "longest time to read a whole request, body included")
	writeTimeout := fs.Duration("write-timeout", server.DefaultWriteTimeout, "longest time from a request's headers to the end of its response")
	idleTimeout := fs.Duration("idle-timeout", server.DefaultIdleTimeout, "longest time a kept-alive connection may wait for its next request")
	partitions := fs.Int("partitions", 1, "partition key ranges per container (1-64)")
	reqTimeout := fs.Duration("request-timeout", 30*time.Second, "longest a request may take before it is stopped and answered 408")
	consistency := fs.String("consistency", "Session", "the account's default consistency level: Strong, BoundedStaleness, Session, ConsistentPrefix or Eventual")
	enforce := fs.Bool("enforce-throughput", false, "refuse requests over a container's provisioned throughput with 429, as the emulator's rate-limiting mode does")
	reserve := fs.Int64("disk-reserve-mib", 0, "free space in MiB that writes leave on the data directory's filesystem for the store's flushes and compactions; writes that find less are refused with 507 until space returns (0: 256; -1: no check)")
	cacheMiB := fs.Int64("cache-mib", 0, "the store's block cache in MiB (0: an eighth of the memory, at least 64)")
	memtableMiB := fs.Int64("memtable-mib", 0, "the size of one of the store's memtables in MiB (0: 16); up to four may be held while flushes catch up")
	clockSkew := fs.Duration("clock-skew", 0, "for testing: run this gateway's local clock this much ahead (or, negative, behind) the machine's; expiry is judged by the store's clock where the store has one, so gateways over one store still agree; a data directory of its own is never stamped before the latest stamp it recorded, so a clock set back waits for it")
	eraseDeadline := fs.Duration("erase-deadline", ttl.DefaultEraseDeadline, "longest an expired item's bytes stay in the store's files after its expiry (ttl.md B4); a container's mayflyErasure.deadlineSeconds overrides it")
	purgeRU := fs.Float64("purge-ru-per-second", 10000, "request units per second per container the TTL purger may spend when users leave them spare")
	fs.Usage = func() { usage(fs) }
	// A word that is not a flag is a mistyped command, not a request to
	// serve: refuse it before any listener or data directory.
	if err := noArgs(fs, args); err != nil {
		return fmt.Errorf("%w (commands: check, backup, restore, export, import, version)", err)
	}
	// Settings are checked here, before the program starts itself again
	// with huge pages (below).
	switch {
	case *partitions < 1 || *partitions > 64:
		return fmt.Errorf("--partitions %d: a container has from 1 to 64 partition key ranges", *partitions)
	case *reserve < -1 || *reserve > maxMiB:
		return fmt.Errorf("--disk-reserve-mib %d: give a number of MiB up to %d, 0 for the default, or -1 for no check", *reserve, maxMiB)
	case *cacheMiB < 0 || *cacheMiB > maxMiB:
		return fmt.Errorf("--cache-mib %d: give a number of MiB up to %d, or 0 for the default", *cacheMiB, maxMiB)
	case *memtableMiB < 0 || *memtableMiB > maxMemtableMiB:
		return fmt.Errorf("--memtable-mib %d: give a number of MiB up to %d, or 0 for the default", *memtableMiB, maxMemtableMiB)
	case !(*purgeRU > 0) || math.IsInf(*purgeRU, 0):
		return fmt.Errorf("--purge-ru-per-second %v: give a positive number", *purgeRU)
	case *reqTimeout <= 0:
		return fmt.Errorf("--request-timeout %v: give a positive duration", *reqTimeout)
	case *noTLS && (*cert != "" || *certKey != ""):
		return errors.New("give --cert and --cert-key, or --no-tls, not both")
	case *key == "" && explicit(fs, "key"):
		// An empty key would leave the well-known one in force.
		return errors.New("--key is empty: give the account key (base64), or leave the flag out for the well-known emulator key")
	case *roKey == "" && explicit(fs, "read-only-key"):
		return errors.New("--read-only-key is empty: give the key (base64), or leave the flag out")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	// Before anything else is done: on success this starts the program
	// again, in this process, with the allocator the memtables live in
	// using huge pages.
	if err := memory.ExecWithHugePages(); err != nil {
		logger.Warn("could not start again with huge pages for the store's memory; running without", "err", err)
	}
	if !*inMemory {
		// In memory, the data itself is on the Go heap, which is then
		// anything but small; Go's default target suits it.
		memory.TuneGC()
	}
	if *postgres != "" && *inMemory {
		return errors.New("give --postgres or --in-memory, not both")
	}
	cfg := server.Config{Addr: *addr, DataDir: *dataDir, InMemory: *inMemory, NoTLS: *noTLS,
		Postgres: *postgres, PostgresPool: *postgresPool, AccessLog: *accessLog,
		CertFile: *cert, KeyFile: *certKey, Logger: logger, PurgeRUPerSecond: *purgeRU, EraseDeadline: *eraseDeadline, DiskReserve: *reserve << 20, CacheSize: *cacheMiB << 20, MemTableSize: *memtableMiB << 20, Partitions: *partitions,
		RequestTimeout: *reqTimeout, EnforceThroughput: *enforce, Consistency: *consistency,
		AdvertiseHost: *advertiseHost, ComputeAddr: *computeAddr,
		MetricsAddr: *metricsAddr, Pprof: *pprof,
		AAD:      server.AADConfig{JWKSFile: *aadJWKS, Issuer: *aadIssuer, Audience: *aadAudience},
		Timeouts: server.Timeouts{ReadHeader: *readHeaderTimeout, Read: *readTimeout, Write: *writeTimeout, Idle: *idleTimeout}}
	if *clockSkew != 0 {
		cfg.Clock = clock.Skewed{Clock: clock.Real{}, Offset: *clockSkew}
	}
	cfg.MetricsOptional = !explicit(fs, "metrics-addr")
	if cfg.MetricsAddr == "off" {
		cfg.MetricsAddr = ""
	}
	if cfg.Pprof && cfg.MetricsAddr == "" {
		return errors.New("--pprof needs --metrics-addr")
	}
	for u := range strings.SplitSeq(*publicURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.PublicURLs = append(cfg.PublicURLs, u)
		}
	}
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
	start := time.Now()
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		_ = srv.Close(context.Background())
		return err
	}
	for _, w := range srv.Warnings() {
		// Said on stderr as well as in the log: a JSON log line is easy
		// to miss, and this one matters.
		fmt.Fprintln(os.Stderr, "mayfly: WARNING:", w)
	}
	logger.Info("mayfly is ready", "url", srv.URL(), "metrics_url", srv.MetricsURL(), "in_memory", cfg.InMemory,
		"data_dir", cfg.DataDir, "startup_ms", time.Since(start).Milliseconds())
	// Starting touched most of the binary; what serving runs comes back.
	if n, err := memory.UnmapExecutable(); err != nil {
		logger.Warn("could not release the executable's pages", "err", err)
	} else {
		logger.Debug("released the executable's pages", "bytes", n)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
	case <-srv.Done():
		logger.Error("server stopped unexpectedly")
	}
	// A request in flight ends within --request-timeout, answered 408 at
	// worst: the shutdown waits that long for the requests, and a little
	// more for their replies and the store's close.
	ctx, cancel := context.WithTimeout(context.Background(), *reqTimeout+10*time.Second)
	defer cancel()
	if err := srv.Close(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("mayfly stopped")
	return nil
}

// maxMiB bounds the sizes given in MiB (2^30 MiB: a pebibyte), far below
// where a size in bytes would wrap; maxMemtableMiB, a memtable's, below
// the 4 GiB the store allows one.
const (
	maxMiB         = 1 << 30
	maxMemtableMiB = 4095
)

// explicit reports whether the flag name was given on the command line or
// in its environment variable, rather than left at its default.
func explicit(fs *flag.FlagSet, name string) bool {
	_, env := os.LookupEnv(envName(name))
	set := env
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// check is "mayfly check --data-dir D": the offline verification of a data
// directory (server.Check). It fails when the directory is damaged or
// inconsistent, after printing the report.
// flagGroups orders the server's flags by purpose in its help; a flag in
// no group is listed under "other".
var flagGroups = []struct {
	title string
	flags []string
}{
	{"Listening", []string{"addr", "public-url", "advertise-host", "compute-addr", "no-tls", "cert", "cert-key"}},
	{"Data", []string{"data-dir", "in-memory", "postgres", "postgres-pool", "partitions", "disk-reserve-mib"}},
	{"Keys and tokens", []string{"key", "key-file", "read-only-key", "read-only-key-file", "aad-jwks-file", "aad-issuer", "aad-audience"}},
	{"Requests", []string{"request-timeout", "read-header-timeout", "read-timeout", "write-timeout", "idle-timeout", "consistency", "enforce-throughput"}},
	{"Time-to-live", []string{"purge-ru-per-second", "erase-deadline", "clock-skew"}},
	{"Operations", []string{"log-level", "access-log", "metrics-addr", "pprof"}},
}

// usage prints the server's help with its flags grouped by purpose.
func usage(fs *flag.FlagSet) {
	w := fs.Output()
	fmt.Fprintln(w, "Usage: mayfly [flags]          serve the Cosmos DB NoSQL API")
	fmt.Fprintln(w, "       mayfly check --data-dir D   verify a stopped server's data directory")
	fmt.Fprintln(w, "       mayfly backup --to DIR      copy a running server's data into a new directory")
	fmt.Fprintln(w, "       mayfly restore --from DIR --data-dir D   make a data directory of a backup")
	fmt.Fprintln(w, "       mayfly export --database D [--container C] [--to FILE]   write items as JSON lines")
	fmt.Fprintln(w, "       mayfly import --database D [--from FILE] [--rate N] [--as-of import|export]")
	fmt.Fprintln(w, "       mayfly version")
	fmt.Fprintln(w, "Every flag can also be set as MAYFLY_<NAME> (--data-dir as MAYFLY_DATA_DIR); flags win.")
	listed := map[string]bool{}
	show := func(f *flag.Flag) {
		listed[f.Name] = true
		name, help := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(help, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.flags {
			if f := fs.Lookup(name); f != nil {
				show(f)
			}
		}
	}
	var rest []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !listed[f.Name] {
			rest = append(rest, f)
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nOther:\n")
		for _, f := range rest {
			show(f)
		}
	}
}

// version names this build: the module's version, and the commit it was
// built from when the build recorded one.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "mayfly (no build information)"
	}
	v := "mayfly " + bi.Main.Version
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (commit %.12s%s, %s)", rev, modified, at)
	}
	return v + " " + bi.GoVersion
}

// clientFlags defines the flags naming a running server and its key on fs,
// and returns the function that makes the client once fs is parsed.
func clientFlags(fs *flag.FlagSet) func() (*transfer.Client, error) {
	endpoint := fs.String("endpoint", "https://localhost:8081/", "the running server's URL")
	key := fs.String("key", server.EmulatorKey, "the server's read-write account key (base64)")
	keyFile := fs.String("key-file", "", "file holding the account key")
	caFile := fs.String("ca-file", "", "PEM file of the server's certificate to trust")
	insecure := fs.Bool("insecure", false, "do not verify the server's certificate (its own self-signed one, on this machine)")
	return func() (*transfer.Client, error) {
		k := *key
		switch {
		case *keyFile != "" && explicit(fs, "key"):
			return nil, errors.New("give --key or --key-file, not both")
		case k == "":
			return nil, errors.New("--key is empty: give the account key (base64), or leave the flag out for the well-known emulator key")
		}
		if *keyFile != "" {
			b, err := os.ReadFile(*keyFile)
			if err != nil {
				return nil, err
			}
			k = strings.TrimSpace(string(b))
		}
		return transfer.NewClient(transfer.ClientOptions{Endpoint: *endpoint, Key: k, CAFile: *caFile, Insecure: *insecure})
	}
}

// envName is the environment variable that sets flag name:
// MAYFLY_DATA_DIR for --data-dir.
func envName(name string) string {
	return "MAYFLY_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// noArgs sets fs's flags from their environment variables, then parses
// args into fs (so flags win), and refuses positional arguments. A
// variable's value is refused as the flag's would be.
func noArgs(fs *flag.FlagSet, args []string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := os.LookupEnv(envName(f.Name)); ok && err == nil {
			if serr := f.Value.Set(v); serr != nil {
				err = fmt.Errorf("%s: invalid value %q for --%s: %w", envName(f.Name), v, f.Name, serr)
			}
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// backup asks a running server to copy its data into a new directory.
func backup(args []string) error {
	fs := flag.NewFlagSet("mayfly backup", flag.ContinueOnError)
	to := fs.String("to", "", "a new directory on the server's machine to write the backup into (required)")
	client := clientFlags(fs)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *to == "" {
		return errors.New("mayfly backup: --to is required")
	}
	dir, err := filepath.Abs(*to)
	if err != nil {
		return err
	}
	c, err := client()
	if err != nil {
		return fmt.Errorf("mayfly backup: %w", err)
	}
	if err := c.Backup(context.Background(), dir); err != nil {
		return fmt.Errorf("mayfly backup: %w", err)
	}
	fmt.Printf("backed up into %s\n", dir)
	return nil
}

// progress reports counts on standard error: a line rewritten in place on
// a terminal, a line now and then otherwise.
func progress(format string) func(args ...any) {
	fi, err := os.Stderr.Stat()
	tty := err == nil && fi.Mode()&os.ModeCharDevice != 0
	return func(args ...any) {
		if tty {
			fmt.Fprintf(os.Stderr, "\r"+format, args...)
		} else {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
}

// export writes a database or container as JSON lines.
func export(args []string) error {
	fs := flag.NewFlagSet("mayfly export", flag.ContinueOnError)
	db := fs.String("database", "", "the database to export (required)")
	coll := fs.String("container", "", "only this container; default: every container of the database")
	to := fs.String("to", "-", "the file to write, - for standard output")
	client := clientFlags(fs)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *db == "" {
		return errors.New("mayfly export: --database is required")
	}
	c, err := client()
	if err != nil {
		return fmt.Errorf("mayfly export: %w", err)
	}
	out := os.Stdout
	// A file is written under another name and renamed to --to once
	// whole: an export that fails leaves no file to take for a whole one,
	// nor one that refuses the export run again.
	partial := *to + ".partial"
	if *to != "-" {
		if _, err := os.Stat(*to); err == nil {
			return fmt.Errorf("mayfly export: %s exists", *to)
		}
		f, err := os.OpenFile(partial, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("mayfly export: %w", err)
		}
		defer f.Close()
		out = f
	}
	report := progress("exported %d items")
	n, err := c.Export(context.Background(), out, transfer.ExportOptions{Database: *db, Container: *coll,
		Progress: func(n int64) { report(n) }})
	if err != nil {
		if out != os.Stdout {
			_ = os.Remove(partial)
		}
		return fmt.Errorf("mayfly export: %w", err)
	}
	if out != os.Stdout {
		if err := out.Sync(); err != nil {
			return err
		}
		if err := os.Rename(partial, *to); err != nil {
			return fmt.Errorf("mayfly export: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "\nexported %d items\n", n)
	return nil
}

// importDump reads JSON lines written by mayfly export into a database.
func importDump(args []string) error {
	fs := flag.NewFlagSet("mayfly import", flag.ContinueOnError)
	db := fs.String("database", "", "the database to import into, created when missing (required)")
	coll := fs.String("container", "", "only this container's items; default: every container in the file")
	from := fs.String("from", "-", "the file to read, - for standard input")
	rate := fs.Float64("rate", 0, "at most this many items per second; 0 for no limit")
	asOf := fs.String("as-of", "import", "what an item's time to live counts from: import (its _ts becomes the import's instant, so it lives its whole ttl again) or export (it keeps the expiry instant it had; items past it are not imported)")
	client := clientFlags(fs)
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *db == "" {
		return errors.New("mayfly import: --database is required")
	}
	if !(*rate >= 0) || math.IsInf(*rate, 0) {
		return fmt.Errorf("mayfly import: --rate %v: give a number of items per second, 0 for no limit", *rate)
	}
	var mode transfer.AsOf
	switch *asOf {
	case "import":
		mode = transfer.AsOfImport
	case "export":
		mode = transfer.AsOfExport
	default:
		return fmt.Errorf("mayfly import: --as-of %q: want import or export", *asOf)
	}
	c, err := client()
	if err != nil {
		return fmt.Errorf("mayfly import: %w", err)
	}
	in := os.Stdin
	if *from != "-" {
		f, err := os.Open(*from)
		if err != nil {
			return fmt.Errorf("mayfly import: %w", err)
		}
		defer f.Close()
		in = f
	}
	report := progress("imported %d, already there %d, expired %d")
	st, err := c.Import(context.Background(), in, transfer.ImportOptions{Database: *db, Container: *coll, Rate: *rate, AsOf: mode,
		Progress: func(s transfer.ImportStats) { report(s.Imported, s.Present, s.Expired) }})
	fmt.Fprintf(os.Stderr, "\nimported %d items, %d already there, %d expired\n", st.Imported, st.Present, st.Expired)
	switch {
	case err != nil && refused(err):
		return fmt.Errorf("mayfly import: %w", err)
	case err != nil:
		return fmt.Errorf("mayfly import: %w (run it again to go on: items already there are skipped)", err)
	}
	return nil
}

// refused reports whether err is the server's refusal of a request, which
// the same request meets again (a 4xx other than 408 and 429), so that
// running the command again cannot get past it.
func refused(err error) bool {
	var e *transfer.Error
	return errors.As(err, &e) && e.Status >= 400 && e.Status < 500 && e.Status != 408 && e.Status != 429
}

// restore makes a new data directory from a backup.
func restore(args []string) error {
	fs := flag.NewFlagSet("mayfly restore", flag.ContinueOnError)
	from := fs.String("from", "", "a directory mayfly backup wrote (required)")
	dataDir := fs.String("data-dir", "./mayfly-data", "the new data directory; it must hold no store yet")
	postgres := fs.String("postgres", "", "restore into this PostgreSQL database instead (a connection string); it must hold no Mayfly data yet")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	if *from == "" {
		return errors.New("mayfly restore: --from is required")
	}
	if *postgres != "" {
		if err := server.RestoreToPostgres(context.Background(), *from, *postgres); err != nil {
			return fmt.Errorf("mayfly restore: %w", err)
		}
		fmt.Println("restored; start the gateways with --postgres")
		return nil
	}
	if err := server.Restore(*from, *dataDir); err != nil {
		return fmt.Errorf("mayfly restore: %w", err)
	}
	fmt.Printf("restored into %s; start it with: mayfly --data-dir %s\n", *dataDir, *dataDir)
	return nil
}

func check(args []string) error {
	fs := flag.NewFlagSet("mayfly check", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./mayfly-data", "the data directory to check; no server may be using it")
	if err := noArgs(fs, args); err != nil {
		return err
	}
	return server.Check(context.Background(), *dataDir, os.Stdout)
}
