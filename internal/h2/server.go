// Package h2 serves HTTP/2 connections (RFC 9113) to an http.Handler, in
// place of net/http's own HTTP/2 server, which it plugs into through
// http.Server.TLSNextProto. HTTP/1.1 stays with net/http.
//
// Why it exists: net/http's server passes every request through three
// goroutines besides the handler's — the connection's frame reader, its
// serving loop, and a goroutine per frame write — and each hand-off can wake
// a thread. Here a connection has one goroutine, which reads frames and
// starts each request's handler; the handler encodes and writes its own
// response under the connection's write lock, its header block and body in
// one write to the socket. docs/design/transport.md has the measurements.
//
// Flow control: a request body is buffered up to the stream's window, which
// is returned to the client as the handler reads; the connection's window
// is returned as data arrives, so the streams' windows bound what a
// connection holds. A response waits for the client's windows.
package h2

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mayfly-db/mayfly/internal/clock"
)

// Settings this server announces.
const (
	// maxStreams is SETTINGS_MAX_CONCURRENT_STREAMS.
	maxStreams = 100
	// streamWindow is SETTINGS_INITIAL_WINDOW_SIZE: what a client may send
	// on a stream before the handler reads it. With maxStreams it bounds a
	// connection's buffered request bodies (25 MiB).
	streamWindow = 256 << 10
	// connWindow is the connection's receive window; its credit goes back
	// once a quarter of it has arrived.
	connWindow = 4 << 20
	// maxReadFrame is SETTINGS_MAX_FRAME_SIZE.
	maxReadFrame = 1 << 20
	// defaultMaxHeaderBytes is net/http's default, http.DefaultMaxHeaderBytes.
	defaultMaxHeaderBytes = 1 << 20
	// writeBuffer is the size of a connection's buffered writer: a point
	// operation's header block and body fit in it, and go out in one write.
	writeBuffer = 16 << 10
)

// Server serves HTTP/2 connections. Configure installs it in an
// http.Server; the zero value takes its timeouts from there.
type Server struct {
	// Clock tells the time for write deadlines and the Date header;
	// clock.Real{} if nil.
	Clock clock.Clock
	// Logger gets connection errors at debug level; slog.Default() if nil.
	Logger *slog.Logger

	prefaceTimeout time.Duration // the client's preface must arrive within it
	readTimeout    time.Duration // a request's body must arrive within it
	writeTimeout   time.Duration // a write, or a wait for a window, may take as long
	idleTimeout    time.Duration // a connection without requests is closed after it
	maxHeaderBytes uint32

	mu           sync.Mutex
	conns        map[*conn]struct{}
	shuttingDown bool

	date atomic.Pointer[dateValue]

	workers workers
}

// Configure makes hs serve HTTP/2 through s, with hs's timeouts:
// ReadHeaderTimeout for the connection preface, ReadTimeout for a request
// body, WriteTimeout for each write and IdleTimeout between requests.
// hs.Shutdown sends GOAWAY and waits for the streams in flight.
func (s *Server) Configure(hs *http.Server) {
	s.prefaceTimeout = orDefault(hs.ReadHeaderTimeout, 10*time.Second)
	s.readTimeout = orDefault(hs.ReadTimeout, time.Minute)
	s.writeTimeout = orDefault(hs.WriteTimeout, 5*time.Minute)
	s.idleTimeout = orDefault(hs.IdleTimeout, 2*time.Minute)
	s.maxHeaderBytes = defaultMaxHeaderBytes
	if hs.MaxHeaderBytes > 0 {
		s.maxHeaderBytes = uint32(hs.MaxHeaderBytes)
	}
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Logger == nil {
		s.Logger = slog.Default()
	}
	if hs.TLSNextProto == nil {
		hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	hs.TLSNextProto["h2"] = func(_ *http.Server, tc *tls.Conn, h http.Handler) {
		state := tc.ConnectionState()
		ctx := context.Background()
		// net/http passes the connection's context (with the server and
		// local address values) through this method of the handler it
		// gives; x/net/http2 reads it the same way.
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		s.ServeConn(ctx, tc, &state, h)
	}
	hs.RegisterOnShutdown(s.shutdown)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// ServeConn serves one connection whose TLS handshake has chosen h2, until
// the client goes away, a protocol error ends it, or the server shuts down.
// It returns once every handler it started has returned.
func (s *Server) ServeConn(ctx context.Context, nc net.Conn, state *tls.ConnectionState, h http.Handler) {
	c := newConn(s, ctx, nc, state, h)
	if !s.track(c) {
		nc.Close()
		return
	}
	defer s.untrack(c)
	c.serve()
}

func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown {
		return false
	}
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// shutdown tells every connection to go away once its streams are done.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.shuttingDown = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAway()
	}
}

// dateValue is the Date header for one second.
type dateValue struct {
	unix int64
	text string
}

// dateHeader returns the Date header's value for now, formatted once a
// second.
func (s *Server) dateHeader() string {
	now := s.Clock.Now()
	if d := s.date.Load(); d != nil && d.unix == now.Unix() {
		return d.text
	}
	d := &dateValue{unix: now.Unix(), text: now.UTC().Format(http.TimeFormat)}
	s.date.Store(d)
	return d.text
}
