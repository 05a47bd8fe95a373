package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/document"
)

// lockedBuffer collects a logger's output from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer runs cfg (in memory, plain HTTP unless said otherwise) until
// the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.InMemory = true
	}
	cfg.NoTLS = true
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		_ = srv.Close(context.Background())
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return srv
}

func port(t *testing.T, srv *Server) string {
	t.Helper()
	_, p, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// signedGet sends a GET signed with the emulator key.
func signedGet(t *testing.T, url, resourceType, link, host string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	key, _ := auth.DecodeKey(EmulatorKey)
	date := auth.FormatDate(time.Now())
	req.Header.Set("x-ms-date", date)
	req.Header.Set("Authorization", auth.MasterHeader(http.MethodGet, resourceType, link, date, key))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// With no address configured the server listens on loopback only, and
// "localhost" serves both 127.0.0.1 and ::1 on one port, since clients
// resolve localhost to either.
func TestListensOnLoopbackByDefault(t *testing.T) {
	var cfg Config
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	host, p, err := net.SplitHostPort(cfg.Addr)
	if err != nil || host != "localhost" || p != "8081" {
		t.Fatalf("default address %q, want localhost:8081", cfg.Addr)
	}
	srv := startServer(t, Config{Addr: "localhost:0"})
	p = port(t, srv)
	targets := []string{"127.0.0.1"}
	if ln, err := net.Listen("tcp", "[::1]:0"); err == nil {
		_ = ln.Close()
		targets = append(targets, "::1")
	} else {
		t.Logf("no IPv6 loopback on this machine: %v", err)
	}
	for _, h := range targets {
		resp, err := http.Get("http://" + net.JoinHostPort(h, p) + "/_explorer/emulator.pem")
		if err != nil {
			t.Errorf("%s: %v", h, err)
			continue
		}
		_ = resp.Body.Close()
	}
	if len(srv.lns) == 0 {
		t.Fatal("no listeners")
	}
	for _, ln := range srv.lns {
		if a := ln.Addr().(*net.TCPAddr); !a.IP.IsLoopback() {
			t.Errorf("listening on %s, not loopback", a)
		}
	}
}

// Listening beyond loopback with the well-known key is logged at warn
// level; with a key of one's own it is not.
func TestWarnsWhenExposedWithEmulatorKey(t *testing.T) {
	own := base64.StdEncoding.EncodeToString([]byte("an account key nobody else knows"))
	for _, tt := range []struct {
		addr string
		keys []string
		warn bool
	}{
		{"0.0.0.0:0", nil, true},
		{":0", nil, true},
		{":0", []string{own}, false},
		{"127.0.0.1:0", nil, false},
		{"localhost:0", nil, false},
	} {
		var log lockedBuffer
		srv := startServer(t, Config{Addr: tt.addr, Keys: tt.keys, Logger: slog.New(slog.NewJSONHandler(&log, nil))})
		warned := strings.Contains(log.String(), `"level":"WARN","msg":"the API is reachable from other machines`)
		if warned != tt.warn {
			t.Errorf("addr %s, keys %d: warned %v, want %v; log:\n%s", tt.addr, len(tt.keys), warned, tt.warn, log.String())
		}
		if got := len(srv.Warnings()) > 0; got != tt.warn {
			t.Errorf("addr %s, keys %d: Warnings() = %q", tt.addr, len(tt.keys), srv.Warnings())
		}
	}
}

// The API port does not serve /metrics, which names every database and
// container, to callers without a key.
func TestMetricsNotOnAPIPort(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0"})
	resp, err := http.Get(srv.URL() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK || bytes.Contains(body, []byte("go_goroutines")) {
		t.Errorf("GET /metrics on the API port: %d %.200s", resp.StatusCode, body)
	}
}

// Metrics and profiles have their own listener; the profiles never show
// the command line, which may hold the key.
func TestMetricsListener(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Pprof: true})
	base := strings.TrimSuffix(srv.MetricsURL(), "/metrics")
	for path, want := range map[string]int{
		"/metrics":             http.StatusOK,
		"/debug/pprof/":        http.StatusOK,
		"/debug/pprof/heap":    http.StatusOK,
		"/debug/pprof/cmdline": http.StatusNotFound,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
		if bytes.Contains(body, []byte(os.Args[0])) {
			t.Errorf("GET %s shows the command line", path)
		}
		if path == "/metrics" {
			checkStoreMemory(t, body)
		}
	}
	// Without Pprof, no profiles.
	srv = startServer(t, Config{Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"})
	resp, err := http.Get(strings.TrimSuffix(srv.MetricsURL(), "/metrics") + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("profiles served without Pprof: %d", resp.StatusCode)
	}
	// A taken address fails the start, unless the address is optional.
	busy := Config{Addr: "127.0.0.1:0", InMemory: true, NoTLS: true, MetricsAddr: strings.TrimPrefix(base, "http://")}
	s2, err := New(busy)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Start(); err == nil {
		t.Error("Start succeeded with the metrics address taken")
	}
	_ = s2.Close(context.Background())
	busy.MetricsOptional = true
	s3 := startServer(t, busy)
	if s3.MetricsURL() != "" || len(s3.Warnings()) == 0 {
		t.Errorf("optional metrics address taken: MetricsURL %q, warnings %q", s3.MetricsURL(), s3.Warnings())
	}
}

// The metrics show the store's tree: compaction debt, running
// compactions, read amplification, write stalls, and on disk the latency
// of the log's syncs, which a write makes.
func TestStoreTreeMetrics(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		cfg := Config{Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0"}
		if onDisk {
			cfg.DataDir = filepath.Join(t.TempDir(), "data")
		}
		srv := startServer(t, cfg)
		body := document.Obj([]document.Field{{Name: "id", Value: document.Str("db")}})
		if _, err := srv.Engine().CreateDatabase(context.Background(), body, nil); err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(srv.MetricsURL())
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		value := func(name string) (float64, bool) {
			m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindSubmatch(metrics)
			if m == nil {
				return 0, false
			}
			v, err := strconv.ParseFloat(string(m[1]), 64)
			return v, err == nil
		}
		for _, name := range []string{"mayfly_store_compaction_debt_bytes", "mayfly_store_compactions_running",
			"mayfly_store_write_stalls_total", "mayfly_store_write_stall_seconds_total"} {
			if v, ok := value(name); !ok || v < 0 {
				t.Errorf("on disk %v: %s missing or negative", onDisk, name)
			}
		}
		if v, ok := value("mayfly_store_read_amplification"); !ok || v < 0 {
			t.Errorf("on disk %v: read amplification %v", onDisk, v)
		}
		syncs, ok := value("mayfly_store_wal_fsync_seconds_count")
		if onDisk && (!ok || syncs < 1) || !onDisk && ok {
			t.Errorf("on disk %v: %v log syncs (shown %v)", onDisk, syncs, ok)
		}
		if sum, _ := value("mayfly_store_wal_fsync_seconds_sum"); onDisk && (sum <= 0 || sum > syncs*10) {
			t.Errorf("log syncs took %v s in all, for %v syncs: not seconds", sum, syncs)
		}
	}
}

// checkStoreMemory checks that metrics show the store's memory by kind,
// with the mutable memtable's arena counted.
func checkStoreMemory(t *testing.T, metrics []byte) {
	t.Helper()
	for _, kind := range []string{"memtables", "recycled_memtables", "block_cache"} {
		re := regexp.MustCompile(`(?m)^mayfly_store_memory_bytes\{kind="` + kind + `"\} (\S+)$`)
		m := re.FindSubmatch(metrics)
		if m == nil {
			t.Errorf("metrics have no store memory of kind %s", kind)
			continue
		}
		if v, err := strconv.ParseFloat(string(m[1]), 64); err != nil || (kind == "memtables" && v <= 0) {
			t.Errorf("store memory of kind %s: %s", kind, m[1])
		}
	}
}

// Everything under the data directory is private to the server's user,
// even under a umask that would leave it open to all.
func TestDataDirIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	srv, err := New(Config{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	body := document.Obj([]document.Field{{Name: "id", Value: document.Str("db")}})
	if _, err := srv.Engine().CreateDatabase(context.Background(), body, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n++
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", strings.TrimPrefix(path, dir), got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Errorf("only %d entries under the data directory", n)
	}
}

// A client that trickles its body, or never sends it, loses its connection
// after the read timeout instead of holding it forever.
func TestSlowBodyIsCut(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0", Timeouts: Timeouts{Read: 200 * time.Millisecond}})
	conn, err := net.Dial("tcp", "127.0.0.1:"+port(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /dbs HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// A guard against hanging the test, far beyond the timeout: the server
	// must close the connection on its own.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.Copy(io.Discard, conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept the connection of a request whose body never came")
	}
}

// What an error message echoes is bounded: a wrongly signed request for a
// 100 KB path is not answered with a 100 KB message (the 401 quotes the
// payload the signature should cover, path included).
func TestErrorEchoIsCapped(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0"})
	long := strings.Repeat("a", 100_000)
	for _, path := range []string{"dbs/" + long, "dbs/db/colls/c/docs/" + long} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+path, nil)
		req.Header.Set("x-ms-date", auth.FormatDate(time.Now()))
		req.Header.Set("Authorization", "type=master&ver=1.0&sig=AAAA")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		var e struct{ Code, Message string }
		if err := json.Unmarshal(body, &e); err != nil || e.Code == "" {
			t.Errorf("%.20s…: body %.200s is not a Cosmos error", path, body)
		}
		if resp.StatusCode != http.StatusUnauthorized || len(body) > 2048 {
			t.Errorf("%.20s…: %d with a %d-byte body", path, resp.StatusCode, len(body))
		}
	}
}

// accountEndpoint reads the endpoint GET / advertises when asked with host.
func accountEndpoint(t *testing.T, srv *Server, host string) string {
	t.Helper()
	resp := signedGet(t, srv.URL(), "", "", host)
	var acct struct {
		Writable []struct {
			Endpoint string `json:"databaseAccountEndpoint"`
		} `json:"writableLocations"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&acct); err != nil || len(acct.Writable) != 1 {
		t.Fatalf("GET / with Host %q: %d, %v", host, resp.StatusCode, err)
	}
	return acct.Writable[0].Endpoint
}

// The advertised endpoint, which the SDKs then send everything to, is not
// whatever Host a client or proxy sends.
func TestAdvertisedEndpointIgnoresForeignHost(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0"})
	p := port(t, srv)
	for host, want := range map[string]string{
		"":                       srv.URL(),
		"localhost:" + p:         "http://localhost:" + p + "/",
		"localhost:18081":        "http://localhost:18081/",
		"[::1]:" + p:             "http://[::1]:" + p + "/",
		"evil.example:443":       srv.URL(),
		"evil.example":           srv.URL(),
		"127.0.0.1.evil.example": srv.URL(),
	} {
		if got := accountEndpoint(t, srv, host); got != want {
			t.Errorf("Host %q: endpoint %q, want %q", host, got, want)
		}
	}
}

func TestAdvertisedEndpointPublicURLs(t *testing.T) {
	srv := startServer(t, Config{Addr: "127.0.0.1:0", PublicURLs: []string{"https://db.example:8081/", "https://db2.example"}})
	for host, want := range map[string]string{
		"db2.example":      "https://db2.example/",
		"db.example:8081":  "https://db.example:8081/",
		"evil.example:443": "https://db.example:8081/",
		"localhost:9":      "http://localhost:9/",
	} {
		if got := accountEndpoint(t, srv, host); got != want {
			t.Errorf("Host %q: endpoint %q, want %q", host, got, want)
		}
	}
	for _, bad := range []string{"db.example:8081", "ftp://db.example/", "https://db.example/x", "https://u:p@db.example/"} {
		c := Config{PublicURLs: []string{bad}}
		if err := c.Validate(); err == nil {
			t.Errorf("public URL %q accepted", bad)
		}
	}
}

// emulatorToken is an AAD token as the SDKs' emulator credentials build it:
// key in place of a signature.
func emulatorToken(key string) string {
	enc := base64.RawURLEncoding.EncodeToString
	now := time.Now().Unix()
	return enc([]byte(`{"typ":"JWT","alg":"RS256","kid":"CosmosEmulatorPrimaryMaster"}`)) + "." +
		enc([]byte(`{"nbf":`+strconv.FormatInt(now, 10)+`,"exp":`+strconv.FormatInt(now+7200, 10)+`}`)) + "." + enc([]byte(key))
}

// In emulator mode the SDKs' emulator tokens work; with a key of one's own
// no token carrying the key is accepted.
func TestAADTokensFollowTheMode(t *testing.T) {
	own := base64.StdEncoding.EncodeToString([]byte("an account key nobody else knows"))
	for _, tt := range []struct {
		keys  []string
		token string
		want  int
	}{
		{nil, emulatorToken(EmulatorKey), http.StatusOK},
		{[]string{own}, emulatorToken(own), http.StatusUnauthorized},
	} {
		srv := startServer(t, Config{Addr: "127.0.0.1:0", Keys: tt.keys})
		req, _ := http.NewRequest(http.MethodGet, srv.URL()+"dbs", nil)
		req.Header.Set("Authorization", auth.AADHeader(tt.token))
		req.Header.Set("x-ms-date", auth.FormatDate(time.Now()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("keys %d: GET /dbs with an emulator token: %d, want %d", len(tt.keys), resp.StatusCode, tt.want)
		}
	}
}

// TestStoreSizesAreChecked refuses cache and memtable sizes the store
// cannot take, and opens a store with small ones.
func TestStoreSizesAreChecked(t *testing.T) {
	for _, c := range []Config{{CacheSize: -1}, {MemTableSize: -1}, {MemTableSize: 4 << 30}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	startServer(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir(), CacheSize: 8 << 20, MemTableSize: 4 << 20})
}
