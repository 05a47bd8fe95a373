package h2

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/mayfly-db/mayfly/internal/tlscert"
)

// hangLimit turns a hang into a failure; nothing in these tests is expected
// to come near it.
const hangLimit = 10 * time.Second

// discardLogger keeps the package's debug logging out of test output.
var discardLogger = slog.New(slog.DiscardHandler)

type certBundle struct {
	cert tls.Certificate
	pool *x509.CertPool
	err  error
}

// testCert is made once: every test server serves the same certificate.
var testCert = sync.OnceValue(func() certBundle {
	cert, certPEM, err := tlscert.LoadOrCreate("", time.Now())
	if err != nil {
		return certBundle{err: err}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return certBundle{err: errors.New("no certificate in the PEM")}
	}
	return certBundle{cert: cert, pool: pool}
})

// testServer is an https server on 127.0.0.1 whose HTTP/2 is this package.
type testServer struct {
	addr  string
	hs    *http.Server
	h2    *Server
	pool  *x509.CertPool
	conns atomic.Int32 // TCP connections accepted
}

// startServer serves h over TLS; configure may set the http.Server's
// timeouts and limits before Configure reads them.
func startServer(t *testing.T, h http.Handler, configure ...func(*http.Server)) *testServer {
	t.Helper()
	cb := testCert()
	if cb.err != nil {
		t.Fatal(cb.err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: ln.Addr().String(), pool: cb.pool, h2: &Server{Logger: discardLogger}}
	ts.hs = &http.Server{
		Handler:   h,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cb.cert}, NextProtos: []string{"h2", "http/1.1"}},
		ErrorLog:  log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				ts.conns.Add(1)
			}
		},
	}
	for _, f := range configure {
		f(ts.hs)
	}
	ts.h2.Configure(ts.hs)
	served := make(chan error, 1)
	go func() { served <- ts.hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ts.hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeTLS: %v", err)
		}
	})
	return ts
}

// client is a net/http client that speaks HTTP/2 to ts.
func (ts *testServer) client(t *testing.T) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ts.pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: hangLimit}
}

func (ts *testServer) url(path string) string { return "https://" + ts.addr + path }

// serverConns returns the connections the h2 server is serving.
func (ts *testServer) serverConns() []*conn {
	ts.h2.mu.Lock()
	defer ts.h2.mu.Unlock()
	var cs []*conn
	for c := range ts.h2.conns {
		cs = append(cs, c)
	}
	return cs
}

// waitUntil polls cond: a server's internal state has no event to wait on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitWindowWaiters waits until n handlers wait for the client's window:
// everything they could send before that is on the wire.
func (ts *testServer) waitWindowWaiters(t *testing.T, n int) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%d handlers wait for window", n), func() bool {
		total := 0
		for _, c := range ts.serverConns() {
			c.mu.Lock()
			total += c.windowWaiters
			c.mu.Unlock()
		}
		return total == n
	})
}

// rawConn is a client speaking frames, to check what the server sends.
type rawConn struct {
	t         *testing.T
	nc        net.Conn
	fr        *http2.Framer
	henc      *hpack.Encoder
	hbuf      bytes.Buffer
	authority string
	settings  map[http2.SettingID]uint32 // the server's first SETTINGS
	goAways   []http2.GoAwayFrame        // seen by readResponse
	others    []http2.FrameHeader        // frames on other streams, seen by readResponse
	pingSeq   uint64
}

// dial connects, exchanges prefaces and announces settings.
func (ts *testServer) dial(t *testing.T, settings ...http2.Setting) *rawConn {
	t.Helper()
	return ts.dialEarly(t, nil, settings...)
}

// dialEarly is dial with frames sent right after the client's preface,
// before the server's: the tests of timeouts that start with the
// connection use it, so that a slow client does not run into them.
func (ts *testServer) dialEarly(t *testing.T, early func(*rawConn), settings ...http2.Setting) *rawConn {
	t.Helper()
	tc, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	if got := tc.ConnectionState().NegotiatedProtocol; got != "h2" {
		t.Fatalf("ALPN chose %q, want h2", got)
	}
	return newRawConn(t, tc, ts.addr, early, settings...)
}

// newRawConn exchanges prefaces on nc and announces settings.
func newRawConn(t *testing.T, nc net.Conn, authority string, early func(*rawConn), settings ...http2.Setting) *rawConn {
	t.Helper()
	if err := nc.SetDeadline(time.Now().Add(hangLimit)); err != nil {
		t.Fatal(err)
	}
	c := &rawConn{t: t, nc: nc, authority: authority, settings: map[http2.SettingID]uint32{}}
	c.fr = http2.NewFramer(nc, nc)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c.check(c.fr.WriteSettings(settings...))
	if early != nil {
		early(c)
	}
	f := c.readFrame()
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		t.Fatalf("the server's first frame is %v, want SETTINGS", f)
	}
	c.check(sf.ForeachSetting(func(s http2.Setting) error {
		c.settings[s.ID] = s.Val
		return nil
	}))
	c.check(c.fr.WriteSettingsAck())
	return c
}

func (c *rawConn) check(err error) {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawConn) readFrame() http2.Frame {
	c.t.Helper()
	f, err := c.fr.ReadFrame()
	if err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	return f
}

// readUntil reads frames until stop returns true.
func (c *rawConn) readUntil(stop func(http2.Frame) bool) {
	c.t.Helper()
	for !stop(c.readFrame()) {
	}
}

// fence sends a PING and reads until its ACK, passing every frame before
// it to each: what the server sent before it read the PING has arrived.
func (c *rawConn) fence(each func(http2.Frame)) {
	c.t.Helper()
	c.pingSeq++
	var data [8]byte
	binary.BigEndian.PutUint64(data[:], c.pingSeq)
	c.check(c.fr.WritePing(false, data))
	c.readUntil(func(f http2.Frame) bool {
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == data {
			return true
		}
		if each != nil {
			each(f)
		}
		return false
	})
}

// headers sends a header block of name/value pairs.
func (c *rawConn) headers(id uint32, end bool, kv ...string) {
	c.t.Helper()
	c.hbuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		c.check(c.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]}))
	}
	c.check(c.fr.WriteHeaders(http2.HeadersFrameParam{
		StreamID: id, BlockFragment: c.hbuf.Bytes(), EndStream: end, EndHeaders: true,
	}))
}

// request sends a request's HEADERS: method, path, then extra fields.
func (c *rawConn) request(id uint32, method, path string, end bool, extra ...string) {
	c.t.Helper()
	kv := append([]string{":method", method, ":scheme", "https", ":authority", c.authority, ":path", path}, extra...)
	c.headers(id, end, kv...)
}

func (c *rawConn) get(id uint32, path string, extra ...string) {
	c.t.Helper()
	c.request(id, http.MethodGet, path, true, extra...)
}

// data sends p on stream id in frames of at most 16 KiB.
func (c *rawConn) data(id uint32, end bool, p []byte) {
	c.t.Helper()
	for {
		n := min(len(p), 16<<10)
		last := n == len(p)
		c.check(c.fr.WriteData(id, end && last, p[:n]))
		p = p[n:]
		if last {
			return
		}
	}
}

type rawResponse struct {
	status string
	header http.Header
	body   []byte
	rst    *http2.ErrCode // the stream was reset instead of ended
}

// readResponse reads stream id's response until END_STREAM or RST_STREAM;
// it keeps GOAWAY frames and the headers of frames on other streams.
func (c *rawConn) readResponse(id uint32) rawResponse {
	c.t.Helper()
	return c.readResponses(id)[id]
}

// readResponses reads the responses of streams ids, in whatever order they
// come, until each has ended or been reset.
func (c *rawConn) readResponses(ids ...uint32) map[uint32]rawResponse {
	c.t.Helper()
	rs := map[uint32]*rawResponse{}
	for _, id := range ids {
		rs[id] = &rawResponse{header: http.Header{}}
	}
	done := map[uint32]rawResponse{}
	for len(done) < len(ids) {
		f := c.readFrame()
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			c.goAways = append(c.goAways, *f)
			continue
		case *http2.SettingsFrame, *http2.PingFrame:
			continue
		}
		fh := f.Header()
		r := rs[fh.StreamID]
		if r == nil {
			if fh.StreamID != 0 {
				c.others = append(c.others, fh)
			}
			continue
		}
		ended := false
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			for _, hf := range f.Fields {
				if hf.Name == ":status" {
					r.status = hf.Value
				} else {
					r.header.Add(hf.Name, hf.Value)
				}
			}
			ended = f.StreamEnded()
		case *http2.DataFrame:
			r.body = append(r.body, f.Data()...)
			ended = f.StreamEnded()
		case *http2.RSTStreamFrame:
			code := f.ErrCode
			r.rst = &code
			ended = true
		}
		if ended {
			done[fh.StreamID] = *r
			delete(rs, fh.StreamID)
		}
	}
	return done
}

// expectOK checks that streams ids get 200 with body want.
func (c *rawConn) expectOK(want string, ids ...uint32) {
	c.t.Helper()
	for id, r := range c.readResponses(ids...) {
		if r.rst != nil {
			c.t.Fatalf("stream %d: RST_STREAM %v, want a response", id, *r.rst)
		}
		if r.status != "200" || string(r.body) != want {
			c.t.Fatalf("stream %d: status %q body %q, want 200 %q", id, r.status, r.body, want)
		}
	}
}

// expectRST reads until stream id is reset, and checks the code.
func (c *rawConn) expectRST(id uint32, code http2.ErrCode) {
	c.t.Helper()
	c.readUntil(func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			if f.StreamID != id {
				return false
			}
			if f.ErrCode != code {
				c.t.Fatalf("stream %d reset with %v, want %v", id, f.ErrCode, code)
			}
			return true
		case *http2.GoAwayFrame:
			c.t.Fatalf("GOAWAY %v while waiting for stream %d's RST_STREAM %v", f.ErrCode, id, code)
		}
		return false
	})
}

// expectGoAway reads until GOAWAY, checks its code, and then that the
// server closes the connection.
func (c *rawConn) expectGoAway(code http2.ErrCode) *http2.GoAwayFrame {
	c.t.Helper()
	var g *http2.GoAwayFrame
	c.readUntil(func(f http2.Frame) bool {
		g, _ = f.(*http2.GoAwayFrame)
		return g != nil
	})
	if g.ErrCode != code {
		c.t.Fatalf("GOAWAY %v, want %v", g.ErrCode, code)
	}
	got := *g
	c.expectClosed()
	return &got
}

// expectClosed reads until the server closes the connection, and returns
// the headers of the frames before that.
func (c *rawConn) expectClosed() []http2.FrameHeader {
	c.t.Helper()
	var seen []http2.FrameHeader
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				c.t.Fatalf("the server left the connection open (frames after: %v)", seen)
			}
			return seen
		}
		seen = append(seen, f.Header())
	}
}

// pattern is n bytes that do not repeat with any power-of-two period, so
// a misplaced chunk shows.
func pattern(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i % 251)
	}
	return p
}

// recv waits for a value from ch, failing after hangLimit.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangLimit):
		t.Fatalf("gave up waiting for %s", what)
		panic("unreachable")
	}
}

// awaitCancel waits, in a handler, for its request's context to end, and
// returns the context's error, or an error of its own after hangLimit.
func awaitCancel(r *http.Request) error {
	select {
	case <-r.Context().Done():
		return r.Context().Err()
	case <-time.After(hangLimit):
		return errors.New("the handler's context was not canceled")
	}
}

// --- Requests and responses through net/http's client ---

// requestSeen is what a handler saw of its request.
type requestSeen struct {
	method, host, requestURI, path, rawQuery, proto string
	protoMajor, protoMinor                          int
	remoteAddr                                      string
	tlsProto                                        string
	tlsDone                                         bool
	custom                                          []string // Header["X-Custom-Thing"]
	contentLength                                   int64
	body                                            string
	ourBody                                         bool // r.Body is this package's
	server                                          any  // the http.ServerContextKey value
	localAddr                                       any
}

func TestGoClientRequests(t *testing.T) {
	t.Parallel()
	const fixedDate = "Mon, 02 Jan 2006 15:04:05 GMT"
	tests := []struct {
		name       string
		method     string
		target     string
		body       string
		handler    func(w http.ResponseWriter, r *http.Request) error
		wantStatus int
		wantBody   string
		wantHeader map[string][]string // nil value: must be absent
		wantDate   string              // "" for any valid date
	}{
		{
			name: "GET sniffs text", method: "GET", target: "/a/b?x=1&y=two",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Add("X-Reply", "a")
				w.Header().Add("X-Reply", "b")
				_, err := io.WriteString(w, "hello, world")
				return err
			},
			wantStatus: 200, wantBody: "hello, world",
			wantHeader: map[string][]string{
				"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {"12"}, "X-Reply": {"a", "b"},
			},
		},
		{
			name: "GET sniffs html", method: "GET", target: "/page",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				_, err := io.WriteString(w, "<!DOCTYPE html><html><body>hi</body></html>")
				return err
			},
			wantStatus: 200, wantBody: "<!DOCTYPE html><html><body>hi</body></html>",
			wantHeader: map[string][]string{"Content-Type": {"text/html; charset=utf-8"}, "Content-Length": {"43"}},
		},
		{
			name: "POST keeps the handler's content type", method: "POST", target: "/post", body: "<html>payload</html>",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, err := io.Copy(w, r.Body)
				return err
			},
			wantStatus: 201, wantBody: "<html>payload</html>",
			wantHeader: map[string][]string{"Content-Type": {"application/json"}, "Content-Length": {"20"}},
		},
		{
			name: "empty body", method: "GET", target: "/empty",
			handler:    func(w http.ResponseWriter, r *http.Request) error { return nil },
			wantStatus: 200,
			wantHeader: map[string][]string{"Content-Length": {"0"}, "Content-Type": nil},
		},
		{
			name: "204 has no body", method: "GET", target: "/204",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("X-Reply", "yes")
				w.WriteHeader(http.StatusNoContent)
				if _, err := w.Write([]byte("body")); !errors.Is(err, http.ErrBodyNotAllowed) {
					return fmt.Errorf("Write after 204: %v, want ErrBodyNotAllowed", err)
				}
				return nil
			},
			wantStatus: 204,
			wantHeader: map[string][]string{"X-Reply": {"yes"}, "Content-Length": nil, "Content-Type": nil},
		},
		{
			name: "304 has no body", method: "GET", target: "/304",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Etag", `"v1"`)
				w.WriteHeader(http.StatusNotModified)
				if _, err := w.Write([]byte("body")); !errors.Is(err, http.ErrBodyNotAllowed) {
					return fmt.Errorf("Write after 304: %v, want ErrBodyNotAllowed", err)
				}
				return nil
			},
			wantStatus: 304,
			wantHeader: map[string][]string{"Etag": {`"v1"`}, "Content-Length": nil, "Content-Type": nil},
		},
		{
			name: "HEAD gets headers and no body", method: "HEAD", target: "/head",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("X-Reply", "head")
				n, err := io.WriteString(w, "hello, world")
				if n != 12 {
					return fmt.Errorf("Write on HEAD wrote %d, want 12", n)
				}
				return err
			},
			wantStatus: 200,
			wantHeader: map[string][]string{"X-Reply": {"head"}, "Content-Length": {"12"}, "Content-Type": {"text/plain"}},
		},
		{
			name: "hop-by-hop and invalid fields are dropped", method: "GET", target: "/drop",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Connection", "close")
				w.Header().Set("Keep-Alive", "timeout=5")
				w.Header().Set("Transfer-Encoding", "chunked")
				w.Header().Set("Upgrade", "websocket")
				w.Header()["Bad Name"] = []string{"x"}
				w.Header()["X-Bad-Value"] = []string{"a\nb"}
				w.Header().Set("X-Good", "kept")
				return nil
			},
			wantStatus: 200,
			wantHeader: map[string][]string{
				"Connection": nil, "Keep-Alive": nil, "Transfer-Encoding": nil, "Upgrade": nil,
				"Bad Name": nil, "X-Bad-Value": nil, "X-Good": {"kept"},
			},
		},
		{
			name: "the handler's Date is kept", method: "GET", target: "/date",
			handler: func(w http.ResponseWriter, r *http.Request) error {
				w.Header().Set("Date", fixedDate)
				return nil
			},
			wantStatus: 200, wantDate: fixedDate,
		},
	}
	seen := make(chan requestSeen, 1)
	var current atomic.Pointer[func(http.ResponseWriter, *http.Request) error]
	handlerErr := make(chan error, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ours := r.Body.(*body)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			handlerErr <- err
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		s := requestSeen{
			method: r.Method, host: r.Host, requestURI: r.RequestURI, path: r.URL.Path, rawQuery: r.URL.RawQuery,
			proto: r.Proto, protoMajor: r.ProtoMajor, protoMinor: r.ProtoMinor, remoteAddr: r.RemoteAddr,
			custom: r.Header["X-Custom-Thing"], contentLength: r.ContentLength, body: string(b), ourBody: ours,
			server: r.Context().Value(http.ServerContextKey), localAddr: r.Context().Value(http.LocalAddrContextKey),
		}
		if r.TLS != nil {
			s.tlsProto, s.tlsDone = r.TLS.NegotiatedProtocol, r.TLS.HandshakeComplete
		}
		seen <- s
		handlerErr <- (*current.Load())(w, r)
	}))
	client := ts.client(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.handler
			current.Store(&h)
			req, err := http.NewRequest(tt.method, ts.url(tt.target), strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.body == "" {
				req.Body = nil
			}
			// Lower case here: the server must canonicalize.
			req.Header["x-custom-thing"] = []string{"v1"}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := recv(t, handlerErr, "the handler"); err != nil {
				t.Errorf("handler: %v", err)
			}
			s := recv(t, seen, "the request")

			if resp.ProtoMajor != 2 {
				t.Errorf("response proto %s, want HTTP/2", resp.Proto)
			}
			if resp.StatusCode != tt.wantStatus || string(got) != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, got, tt.wantStatus, tt.wantBody)
			}
			for k, want := range tt.wantHeader {
				if g := resp.Header[k]; fmt.Sprint(g) != fmt.Sprint(want) || (want == nil) != (g == nil) {
					t.Errorf("response header %s = %q, want %q", k, g, want)
				}
			}
			dates := resp.Header["Date"]
			if len(dates) != 1 {
				t.Errorf("Date header %q, want one", dates)
			} else if tt.wantDate != "" {
				if dates[0] != tt.wantDate {
					t.Errorf("Date %q, want the handler's %q", dates[0], tt.wantDate)
				}
			} else if d, err := http.ParseTime(dates[0]); err != nil || time.Until(d).Abs() > time.Hour {
				t.Errorf("Date %q: not the current time in HTTP format (%v)", dates[0], err)
			}

			wantSeen := requestSeen{
				method: tt.method, host: ts.addr, requestURI: tt.target, proto: "HTTP/2.0", protoMajor: 2,
				tlsProto: "h2", tlsDone: true, custom: []string{"v1"}, body: tt.body,
			}
			wantSeen.path, wantSeen.rawQuery, _ = strings.Cut(tt.target, "?")
			wantSeen.remoteAddr = s.remoteAddr
			// Compared apart: printing them would print a whole server.
			server, localAddr := s.server, s.localAddr
			s.server, s.localAddr = nil, nil
			if server != ts.hs {
				t.Errorf("ServerContextKey %p, want the http.Server %p", server, ts.hs)
			}
			if tt.body != "" {
				wantSeen.contentLength = int64(len(tt.body))
				wantSeen.ourBody = true
			}
			if fmt.Sprint(s) != fmt.Sprint(wantSeen) {
				t.Errorf("handler saw\n%+v\nwant\n%+v", s, wantSeen)
			}
			if host, _, err := net.SplitHostPort(s.remoteAddr); err != nil || host != "127.0.0.1" {
				t.Errorf("RemoteAddr %q, want 127.0.0.1:port", s.remoteAddr)
			}
			if la, ok := localAddr.(net.Addr); !ok || la.String() != ts.addr {
				t.Errorf("LocalAddrContextKey %v, want %s", localAddr, ts.addr)
			}
		})
	}
}

// TestRawRequestFields checks how header fields become an http.Request.
func TestRawRequestFields(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, remote  string
		path          string
		header        http.Header
		contentLength int64
		noBody        bool
		body          string
		bodyErr       error
	}
	got := make(chan seen, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		got <- seen{host: r.Host, remote: r.RemoteAddr, path: r.URL.Path, header: r.Header, contentLength: r.ContentLength,
			noBody: r.Body == http.NoBody, body: string(b), bodyErr: err}
	}))
	c := ts.dial(t)
	tests := []struct {
		name   string
		send   func(id uint32)
		want   seen
		header http.Header // a subset of what the handler must see
	}{
		{
			name: "repeated fields and cookies",
			send: func(id uint32) {
				c.get(id, "/", "x-rep", "1", "x-rep", "2", "cookie", "a=1", "accept", "*/*", "cookie", "b=2")
			},
			want:   seen{host: ts.addr, contentLength: 0, noBody: true},
			header: http.Header{"X-Rep": {"1", "2"}, "Cookie": {"a=1; b=2"}, "Accept": {"*/*"}},
		},
		{
			name: "a path that is not a URI",
			send: func(id uint32) { c.get(id, "/dbs/a%zz") },
			want: seen{host: ts.addr, noBody: true, path: "/dbs/a%zz"},
		},
		{
			name: "host header without :authority",
			send: func(id uint32) {
				c.headers(id, true, ":method", "GET", ":scheme", "https", ":path", "/", "host", "example.test")
			},
			want: seen{host: "example.test", noBody: true},
		},
		{
			name: "body with content-length",
			send: func(id uint32) {
				c.request(id, "PUT", "/", false, "content-length", "2")
				c.data(id, true, []byte("he"))
			},
			want: seen{host: ts.addr, contentLength: 2, body: "he"},
		},
		{
			name: "body without content-length, ended by an empty DATA",
			send: func(id uint32) {
				c.request(id, "POST", "/", false)
				c.data(id, false, []byte("abc"))
				c.data(id, false, []byte("def"))
				c.data(id, true, nil)
			},
			want: seen{host: ts.addr, contentLength: -1, body: "abcdef"},
		},
		{
			name: "body ended by trailers",
			send: func(id uint32) {
				c.request(id, "POST", "/", false)
				c.data(id, false, []byte("xyz"))
				c.headers(id, true, "x-trailer", "t")
			},
			want: seen{host: ts.addr, contentLength: -1, body: "xyz"},
		},
	}
	id := uint32(1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.t = t
			tt.send(id)
			s := recv(t, got, "the request")
			c.expectOK("", id)
			id += 2
			if s.bodyErr != nil {
				t.Errorf("reading the body: %v", s.bodyErr)
			}
			if s.remote != c.nc.LocalAddr().String() {
				t.Errorf("RemoteAddr %q, want the client's %q", s.remote, c.nc.LocalAddr())
			}
			if tt.want.path != "" && s.path != tt.want.path {
				t.Errorf("path %q, want %q", s.path, tt.want.path)
			}
			if s.host != tt.want.host || s.contentLength != tt.want.contentLength || s.noBody != tt.want.noBody || s.body != tt.want.body {
				t.Errorf("host %q, ContentLength %d, NoBody %v, body %q; want %q, %d, %v, %q",
					s.host, s.contentLength, s.noBody, s.body, tt.want.host, tt.want.contentLength, tt.want.noBody, tt.want.body)
			}
			for k, want := range tt.header {
				if fmt.Sprint(s.header[k]) != fmt.Sprint(want) {
					t.Errorf("Header[%q] = %q, want %q (header %v)", k, s.header[k], want, s.header)
				}
			}
		})
	}
}

// TestServerPreface checks the settings the server announces, and the
// connection window it opens.
func TestServerPreface(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.NotFoundHandler(), func(hs *http.Server) { hs.MaxHeaderBytes = 12345 })
	c := ts.dial(t)
	want := map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: maxStreams,
		http2.SettingInitialWindowSize:    streamWindow,
		http2.SettingMaxFrameSize:         maxReadFrame,
		http2.SettingMaxHeaderListSize:    12345,
	}
	if fmt.Sprint(c.settings) != fmt.Sprint(want) {
		t.Errorf("server settings %v, want %v", c.settings, want)
	}
	wu, ok := c.readFrame().(*http2.WindowUpdateFrame)
	if !ok || wu.StreamID != 0 || wu.Increment != connWindow-65535 {
		t.Fatalf("second frame %v, want WINDOW_UPDATE on the connection of %d", wu, connWindow-65535)
	}
	// Our SETTINGS is acknowledged.
	if f, ok := c.readFrame().(*http2.SettingsFrame); !ok || !f.IsAck() {
		t.Fatalf("got %v, want SETTINGS ACK", f)
	}
}

// --- Large bodies ---

// TestLargeRequestBodyEcho sends a body many times the stream window: it
// only gets through if the server returns credit as the handler reads.
func TestLargeRequestBodyEcho(t *testing.T) {
	t.Parallel()
	const size = 3 << 20
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(w, r.Body)
	}))
	want := pattern(size)
	resp, err := ts.client(t).Post(ts.url("/echo"), "application/octet-stream", bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
		t.Fatalf("%s %d, want HTTP/2 200", resp.Proto, resp.StatusCode)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes, want the %d sent (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
	}
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// TestRequestBodyWindowCredit sends a body frame by frame within the
// windows the server gives, and checks that the credit arrives as the
// handler reads and never exceeds what was sent. Padding counts against
// the windows, so a padded body gets through only if its padding is
// credited too.
func TestRequestBodyWindowCredit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		chunk, padding int
		size           int64
	}{
		{"unpadded", 16 << 10, 0, 2 << 20},
		// Padding alone overruns the stream window.
		{"padded", 64, 255, 1100 * 64},
	}
	n := map[string]chan int64{}
	for _, tt := range tests {
		n["/"+tt.name] = make(chan int64, 1)
	}
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ := io.Copy(io.Discard, r.Body)
		n[r.URL.Path] <- got
	}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			size, padding := tt.size, tt.padding
			c := ts.dial(t)
			// The preface's WINDOW_UPDATE opens the connection to connWindow.
			if wu, ok := c.readFrame().(*http2.WindowUpdateFrame); !ok || wu.StreamID != 0 {
				t.Fatalf("got %v, want the preface's WINDOW_UPDATE", wu)
			}
			connWin, streamWin := int64(connWindow), int64(c.settings[http2.SettingInitialWindowSize])
			var sent, wire, streamCredit, connCredit int64
			c.request(1, "POST", "/"+tt.name, false)
			chunk := pattern(tt.chunk)
			frameLen := int64(len(chunk))
			if padding > 0 {
				frameLen += 1 + int64(padding) // the Pad Length field and the padding
			}
			onFrame := func(f http2.Frame) {
				if wu, ok := f.(*http2.WindowUpdateFrame); ok {
					switch wu.StreamID {
					case 0:
						connWin += int64(wu.Increment)
						connCredit += int64(wu.Increment)
					case 1:
						streamWin += int64(wu.Increment)
						streamCredit += int64(wu.Increment)
					}
				}
			}
			for sent < size {
				for streamWin < frameLen || connWin < frameLen {
					onFrame(c.readFrame())
				}
				end := sent+int64(len(chunk)) == size
				if padding > 0 {
					c.check(c.fr.WriteDataPadded(1, end, chunk, make([]byte, padding)))
				} else {
					c.check(c.fr.WriteData(1, end, chunk))
				}
				sent += int64(len(chunk))
				wire += frameLen
				streamWin -= frameLen
				connWin -= frameLen
				if streamCredit > wire {
					t.Fatalf("stream credit %d exceeds the %d bytes sent", streamCredit, wire)
				}
			}
			if got := recv(t, n["/"+tt.name], "the handler"); got != size {
				t.Fatalf("handler read %d bytes, want %d", got, size)
			}
			c.readUntil(func(f http2.Frame) bool {
				onFrame(f)
				h, ok := f.(*http2.MetaHeadersFrame)
				return ok && h.StreamID == 1 && h.StreamEnded()
			})
			c.fence(onFrame)
			// The connection's credit comes back as data arrives, a
			// quarter of the window at a time; the stream's as the
			// handler reads, and the body only got through if it did.
			if connCredit > wire || connCredit <= wire-connWindow/4 {
				t.Errorf("connection credit %d, want all but under %d of the %d bytes sent", connCredit, connWindow/4, wire)
			}
			if streamCredit < wire-streamWindow {
				t.Errorf("stream credit %d, want at least %d", streamCredit, wire-streamWindow)
			}
		})
	}
}

// TestRawNoBodyResponses checks on the wire that HEAD, 204 and 304
// responses end with their HEADERS frame, without DATA.
func TestRawNoBodyResponses(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/204":
			w.WriteHeader(http.StatusNoContent)
		case "/304":
			w.WriteHeader(http.StatusNotModified)
		}
		io.WriteString(w, "hello")
	}))
	c := ts.dial(t)
	tests := []struct {
		method, path, status, contentLength string
	}{
		{"HEAD", "/", "200", "5"},
		{"GET", "/204", "204", ""},
		{"GET", "/304", "304", ""},
		{"HEAD", "/204", "204", ""},
	}
	for i, tt := range tests {
		id := uint32(2*i + 1)
		c.request(id, tt.method, tt.path, true)
		var h *http2.MetaHeadersFrame
		c.readUntil(func(f http2.Frame) bool {
			if f.Header().StreamID != id {
				return false
			}
			h, _ = f.(*http2.MetaHeadersFrame)
			if h == nil {
				t.Fatalf("%s %s: %v before the response's HEADERS", tt.method, tt.path, f.Header())
			}
			return true
		})
		if !h.StreamEnded() {
			t.Errorf("%s %s: HEADERS without END_STREAM: a body follows", tt.method, tt.path)
		}
		if got := h.PseudoValue("status"); got != tt.status {
			t.Errorf("%s %s: status %s, want %s", tt.method, tt.path, got, tt.status)
		}
		var cl string
		for _, hf := range h.RegularFields() {
			if hf.Name == "content-length" {
				cl = hf.Value
			}
		}
		if cl != tt.contentLength {
			t.Errorf("%s %s: content-length %q, want %q", tt.method, tt.path, cl, tt.contentLength)
		}
	}
}

// TestResponseSizes checks responses around flushAt: byte-exact, with
// Content-Length only when the whole body fit before the first write.
func TestResponseSizes(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		chunk, _ := strconv.Atoi(r.URL.Query().Get("chunk"))
		p := pattern(n)
		for len(p) > 0 {
			k := min(chunk, len(p))
			if _, err := w.Write(p[:k]); err != nil {
				return
			}
			p = p[k:]
		}
	}))
	client := ts.client(t)
	tests := []struct {
		size, chunk int
		wantCL      bool
	}{
		{0, 1, true},
		{1, 1, true},
		{flushAt - 1, flushAt, true},
		{flushAt - 1, 1000, true},
		{flushAt, flushAt, false},
		{flushAt + 1, flushAt + 1, false},
		{5 << 20, 7001, false},
		{1 << 20, 1 << 20, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d in %d", tt.size, tt.chunk), func(t *testing.T) {
			resp, err := client.Get(ts.url(fmt.Sprintf("/?n=%d&chunk=%d", tt.size, tt.chunk)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 {
				t.Fatalf("proto %s", resp.Proto)
			}
			if want := pattern(tt.size); !bytes.Equal(got, want) {
				t.Fatalf("got %d bytes, want %d (equal prefix %d)", len(got), len(want), commonPrefix(got, want))
			}
			cl := resp.Header.Get("Content-Length")
			if tt.wantCL && cl != strconv.Itoa(tt.size) || !tt.wantCL && cl != "" {
				t.Errorf("Content-Length %q, want it only for bodies under flushAt (%v)", cl, tt.wantCL)
			}
		})
	}
}

// --- Response flow control ---

// TestResponseStreamFlowControl gives the server a small stream window,
// changes it mid-response with SETTINGS and WINDOW_UPDATE, and checks the
// server never sends past it.
func TestResponseStreamFlowControl(t *testing.T) {
	t.Parallel()
	want := pattern(10000)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(want) }))
	c := ts.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	initial, credit := int64(1000), int64(0)
	var got []byte
	ended := false
	onFrame := func(f http2.Frame) {
		switch f := f.(type) {
		case *http2.DataFrame:
			if f.StreamID != 1 {
				t.Fatalf("DATA on stream %d", f.StreamID)
			}
			got = append(got, f.Data()...)
			ended = f.StreamEnded()
			// The window is judged with what this side has sent: no
			// step below lowers it while the server may still send
			// under the old value.
			if int64(len(got)) > initial+credit {
				t.Fatalf("server sent %d bytes on a stream window of %d", len(got), initial+credit)
			}
		case *http2.GoAwayFrame, *http2.RSTStreamFrame:
			t.Fatalf("unexpected %v", f)
		}
	}
	// readTo reads until total bytes arrived, then waits until the
	// handler waits for window and checks nothing more came.
	readTo := func(total int) {
		t.Helper()
		c.readUntil(func(f http2.Frame) bool {
			onFrame(f)
			return len(got) >= total
		})
		if ended {
			return
		}
		ts.waitWindowWaiters(t, 1)
		c.fence(onFrame)
		if len(got) != total {
			t.Fatalf("got %d bytes, want %d", len(got), total)
		}
	}
	c.get(1, "/")
	readTo(1000)

	initial = 3000 // opens 2000 more
	c.check(c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 3000}))
	readTo(3000)

	initial = 500 // the window goes to -2500: nothing may be sent
	c.check(c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 500}))
	c.fence(onFrame)
	ts.waitWindowWaiters(t, 1)
	c.fence(onFrame)
	if len(got) != 3000 {
		t.Fatalf("got %d bytes after the window went negative, want 3000", len(got))
	}

	credit += 2600 // back to +100
	c.check(c.fr.WriteWindowUpdate(1, 2600))
	readTo(3100)

	credit += 1 << 20
	c.check(c.fr.WriteWindowUpdate(1, 1<<20))
	c.readUntil(func(f http2.Frame) bool {
		onFrame(f)
		return ended
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("body: %d bytes, equal prefix %d; want %d", len(got), commonPrefix(got, want), len(want))
	}
}

// TestResponseConnFlowControl checks the connection window, and that DATA
// frames respect the client's SETTINGS_MAX_FRAME_SIZE.
func TestResponseConnFlowControl(t *testing.T) {
	t.Parallel()
	const maxFrame = 20000
	want := pattern(200000)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(want) }))
	c := ts.dial(t,
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20},
		http2.Setting{ID: http2.SettingMaxFrameSize, Val: maxFrame})
	connWin := int64(65535)
	var got []byte
	ended := false
	biggest := 0
	onFrame := func(f http2.Frame) {
		if d, ok := f.(*http2.DataFrame); ok {
			got = append(got, d.Data()...)
			ended = d.StreamEnded()
			biggest = max(biggest, int(d.Length))
			if int64(len(got)) > connWin {
				t.Fatalf("server sent %d bytes on a connection window of %d", len(got), connWin)
			}
		}
	}
	c.get(1, "/")
	c.readUntil(func(f http2.Frame) bool {
		onFrame(f)
		return len(got) >= 65535
	})
	ts.waitWindowWaiters(t, 1)
	c.fence(onFrame)
	if len(got) != 65535 {
		t.Fatalf("got %d bytes, want the connection window's 65535", len(got))
	}
	connWin += 1 << 20
	c.check(c.fr.WriteWindowUpdate(0, 1<<20))
	c.readUntil(func(f http2.Frame) bool {
		onFrame(f)
		return ended
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("body: %d bytes, equal prefix %d; want %d", len(got), commonPrefix(got, want), len(want))
	}
	if biggest != maxFrame {
		t.Errorf("largest DATA frame %d bytes, want the client's SETTINGS_MAX_FRAME_SIZE %d", biggest, maxFrame)
	}
}

// --- Concurrency and cancellation ---

// TestConcurrentRequests sends 3 requests from each of 200 goroutines over
// one x/net ClientConn that keeps to the server's 100 streams, queueing
// the rest; and from 50 through net/http's client.
func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "%s:%s", r.URL.Path, b)
	}))
	// run makes the requests with roundTrip, returning how many the
	// server refused.
	run := func(t *testing.T, goroutines int, roundTrip func(*http.Request) (*http.Response, error)) int64 {
		const each = 3
		var refused atomic.Int64
		errs := make(chan error, goroutines*each)
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range each {
					path := fmt.Sprintf("/g%d/r%d", g, i)
					body := strings.Repeat(fmt.Sprintf("<%d.%d>", g, i), 1+g%50)
					var resp *http.Response
					var err error
					for {
						req, _ := http.NewRequest("POST", ts.url(path), strings.NewReader(body))
						resp, err = roundTrip(req)
						// net/http's Transport retries a refused stream;
						// a bare ClientConn leaves it to its caller. The
						// server should refuse none (the ClientConn keeps
						// within the limit); the count is checked below.
						var se http2.StreamError
						if errors.As(err, &se) && se.Code == http2.ErrCodeRefusedStream {
							refused.Add(1)
							continue
						}
						break
					}
					if err != nil {
						errs <- err
						continue
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case err != nil:
						errs <- err
					case resp.ProtoMajor != 2 || resp.StatusCode != 200:
						errs <- fmt.Errorf("%s: %s %d", path, resp.Proto, resp.StatusCode)
					case string(got) != path+":"+body:
						errs <- fmt.Errorf("%s: got %q", path, got)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		return refused.Load()
	}
	t.Run("one connection", func(t *testing.T) {
		before := ts.conns.Load()
		tc, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.pool, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		// StrictMaxConcurrentStreams queues requests past the server's
		// limit on this connection. net/http's Transport cannot be used
		// for this: with the same option it stalls once more requests
		// wait than the limit allows (golang/go#70809).
		//lint:ignore SA1019 the replacement, net/http's Transport, stalls as said above
		tr := &http2.Transport{StrictMaxConcurrentStreams: true}
		//lint:ignore SA1019 as above
		cc, err := tr.NewClientConn(tc)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		refused := run(t, 200, func(r *http.Request) (*http.Response, error) { return cc.RoundTrip(r.WithContext(ctx)) })
		if n := ts.conns.Load() - before; n != 1 {
			t.Errorf("%d connections, want 1", n)
		}
		if refused > 0 {
			t.Errorf("the server refused %d streams within its limit", refused)
		}
	})
	t.Run("net/http client", func(t *testing.T) {
		client := ts.client(t)
		// A first request makes the connection the others share: with
		// fewer requests in flight than the server's limit, the client
		// needs no other.
		resp, err := client.Get(ts.url("/warm"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		before := ts.conns.Load()
		run(t, 50, client.Do)
		if n := ts.conns.Load() - before; n != 0 {
			t.Errorf("%d more connections, want the first only", n)
		}
	})
}

// TestClientCancel cancels a request in flight: the handler's context ends
// and the connection serves the next request.
func TestClientCancel(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	canceled := make(chan error, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started <- struct{}{}
			canceled <- awaitCancel(r)
			return
		}
		io.WriteString(w, r.RemoteAddr)
	}))
	client := ts.client(t)
	get := func() string {
		t.Helper()
		resp, err := client.Get(ts.url("/addr"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	before := get()

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.url("/block"), nil)
	done := make(chan error, 1)
	go func() {
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	recv(t, started, "the handler to start")
	cancel()
	if err := recv(t, canceled, "the handler's context"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context: %v, want canceled", err)
	}
	if err := recv(t, done, "the client"); err == nil {
		t.Errorf("the canceled request succeeded")
	}
	if after := get(); after != before {
		t.Errorf("the next request came from %s, want the same connection %s", after, before)
	}
	if n := ts.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1", n)
	}
}

// TestRawClientReset checks RST_STREAM from the client exactly: the
// handler's context ends, its writes fail and nothing more is sent on the
// stream.
func TestRawClientReset(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	afterCancel := make(chan error, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/block" {
			io.WriteString(w, "ok")
			return
		}
		started <- struct{}{}
		if err := awaitCancel(r); !errors.Is(err, context.Canceled) {
			afterCancel <- err
			return
		}
		w.Write([]byte("late"))
		w.(http.Flusher).Flush()
		_, err := w.Write(make([]byte, flushAt))
		afterCancel <- err
	}))
	c := ts.dial(t)
	c.request(1, "POST", "/block", false)
	recv(t, started, "the handler to start")
	c.check(c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
	if err := recv(t, afterCancel, "the handler"); err == nil {
		t.Errorf("a write after the client's RST_STREAM succeeded")
	}
	// DATA for the reset stream is ignored.
	c.data(1, true, []byte("ignored"))
	c.get(3, "/")
	c.expectOK("ok", 3)
	if len(c.others) != 0 {
		t.Errorf("frames on other streams after the reset: %v", c.others)
	}
}

// TestUnreadRequestBody: a handler that leaves a body unread still
// answers, and the server stops the client's upload with RST_STREAM
// NO_ERROR after the response.
func TestUnreadRequestBody(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "done")
	}))
	t.Run("raw", func(t *testing.T) {
		c := ts.dial(t)
		c.request(1, "POST", "/", false)
		c.data(1, false, pattern(100<<10))
		c.expectOK("done", 1)
		c.expectRST(1, http2.ErrCodeNo)
		// The rest of the upload is ignored and the connection serves on.
		c.data(1, true, pattern(100<<10))
		c.get(3, "/")
		c.expectOK("done", 3)
	})
	t.Run("go client", func(t *testing.T) {
		resp, err := ts.client(t).Post(ts.url("/"), "application/octet-stream", bytes.NewReader(pattern(3<<20)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 || string(b) != "done" {
			t.Fatalf("%d %q %v, want 200 done", resp.StatusCode, b, err)
		}
	})
}

// --- Protocol errors and control frames ---

// protoEnv is a server for one protocol case: /block waits for its
// context, /echo echoes, anything else answers "ok".
type protoEnv struct {
	ts       *testServer
	started  chan string // the path of each request whose handler ran
	canceled chan struct{}
	bodyErr  chan error
}

func newProtoEnv(t *testing.T, configure ...func(*http.Server)) *protoEnv {
	e := &protoEnv{started: make(chan string, 200), canceled: make(chan struct{}, 200), bodyErr: make(chan error, 10)}
	e.ts = startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.started <- r.URL.Path
		switch r.URL.Path {
		case "/block":
			select {
			case <-r.Context().Done():
				e.canceled <- struct{}{}
			case <-time.After(hangLimit):
			}
		case "/echo":
			_, err := io.Copy(w, r.Body)
			e.bodyErr <- err
		default:
			io.WriteString(w, "ok")
		}
	}), configure...)
	return e
}

// usable checks that the connection still serves a request on stream id.
func (c *rawConn) usable(id uint32) {
	c.t.Helper()
	c.get(id, "/")
	c.expectOK("ok", id)
}

func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	get := func(c *rawConn, extra ...string) []string {
		return append([]string{":method", "GET", ":scheme", "https", ":authority", c.authority, ":path", "/"}, extra...)
	}
	tests := []struct {
		name      string
		configure func(*http.Server)
		run       func(t *testing.T, c *rawConn, e *protoEnv)
	}{
		{"connection header", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, get(c, "connection", "close")...)
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"transfer-encoding header", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/echo", false, "transfer-encoding", "chunked")
			c.expectRST(1, http2.ErrCodeProtocol)
			c.data(1, true, []byte("ignored")) // DATA for the refused stream is ignored
			c.usable(3)
		}},
		{"te other than trailers", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, get(c, "te", "gzip")...)
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"te trailers is allowed", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, get(c, "te", "trailers")...)
			c.expectOK("ok", 1)
		}},
		{"upper-case field name", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, get(c, "X-Upper", "v")...)
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"missing :path", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, ":method", "GET", ":scheme", "https", ":authority", c.authority)
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"unknown pseudo-header", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, true, ":method", "GET", ":scheme", "https", ":path", "/", ":bogus", "x")
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"CONNECT", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(1, false, ":method", "CONNECT", ":authority", "example.test:443")
			c.expectRST(1, http2.ErrCodeProtocol)
			c.usable(3)
		}},
		{"HEADERS on an even stream", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.headers(2, true, get(c)...)
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"DATA on an idle stream", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.data(5, true, []byte("x"))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"RST_STREAM on an idle stream", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteRSTStream(7, http2.ErrCodeCancel))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"PING on a stream", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteRawFrame(http2.FramePing, 0, 1, make([]byte, 8)))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"PUSH_PROMISE from the client", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/block", false)
			c.check(c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true}))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"second HEADERS without END_STREAM", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/block", false)
			c.headers(1, false, "x-more", "1")
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"connection window overflow", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteWindowUpdate(0, 1<<31-1))
			c.expectGoAway(http2.ErrCodeFlowControl)
		}},
		{"zero WINDOW_UPDATE on the connection", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 0, make([]byte, 4)))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"zero WINDOW_UPDATE on a stream", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/block", false)
			c.check(c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 1, make([]byte, 4)))
			c.expectRST(1, http2.ErrCodeProtocol)
			recv(t, e.canceled, "the handler's context")
			c.usable(3)
		}},
		{"stream window overflow", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.get(1, "/block")
			recv(t, e.started, "the handler")
			c.check(c.fr.WriteWindowUpdate(1, 1<<31-1))
			c.expectRST(1, http2.ErrCodeFlowControl)
			recv(t, e.canceled, "the handler's context")
			c.usable(3)
		}},
		{"invalid SETTINGS_INITIAL_WINDOW_SIZE", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 31}))
			c.expectGoAway(http2.ErrCodeFlowControl)
		}},
		{"invalid SETTINGS_MAX_FRAME_SIZE", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: 100}))
			c.expectGoAway(http2.ErrCodeProtocol)
		}},
		{"frame over SETTINGS_MAX_FRAME_SIZE", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			// Only the header: the server must judge the length by it.
			n := maxReadFrame + 1
			hdr := []byte{byte(n >> 16), byte(n >> 8), byte(n), byte(http2.FrameData), 0, 0, 0, 0, 1}
			_, err := c.nc.Write(hdr)
			c.check(err)
			c.expectGoAway(http2.ErrCodeFrameSize)
		}},
		{"DATA beyond the stream window", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/block", false)
			c.data(1, false, pattern(streamWindow+1))
			c.expectRST(1, http2.ErrCodeFlowControl)
			recv(t, e.canceled, "the handler's context")
			c.usable(3)
		}},
		{"DATA after END_STREAM", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.get(1, "/block")
			recv(t, e.started, "the handler")
			c.data(1, true, []byte("late"))
			c.expectRST(1, http2.ErrCodeStreamClosed)
			recv(t, e.canceled, "the handler's context")
			c.usable(3)
		}},
		{"PING is acknowledged with its payload", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
			c.check(c.fr.WritePing(false, data))
			c.readUntil(func(f http2.Frame) bool {
				p, ok := f.(*http2.PingFrame)
				if ok && (!p.IsAck() || p.Data != data) {
					t.Fatalf("PING reply %v %v, want ACK with %v", p.Flags, p.Data, data)
				}
				return ok
			})
			// A PING ACK from the client is not answered.
			c.check(c.fr.WritePing(true, data))
			c.fence(func(f http2.Frame) {
				if _, ok := f.(*http2.PingFrame); ok {
					t.Errorf("the server answered a PING ACK")
				}
			})
		}},
		{"SETTINGS is acknowledged", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			// The ACK of the SETTINGS sent while dialing comes first.
			c.readUntil(func(f http2.Frame) bool {
				s, ok := f.(*http2.SettingsFrame)
				return ok && s.IsAck()
			})
			c.check(c.fr.WriteSettings(http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0}))
			acks := 0
			c.fence(func(f http2.Frame) {
				if s, ok := f.(*http2.SettingsFrame); ok && s.IsAck() {
					acks++
				}
			})
			if acks != 1 {
				t.Fatalf("%d SETTINGS ACKs, want 1", acks)
			}
			// With no dynamic table, the next response still decodes.
			c.usable(1)
			c.usable(3)
		}},
		{"unknown frame types and PRIORITY are ignored", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.check(c.fr.WriteRawFrame(0xfa, 0xff, 0, []byte("ignored")))
			c.check(c.fr.WriteRawFrame(0xfb, 0, 1, nil))
			c.check(c.fr.WritePriority(3, http2.PriorityParam{StreamDep: 1, Weight: 10}))
			c.fence(func(f http2.Frame) {
				if _, ok := f.(*http2.GoAwayFrame); ok {
					t.Fatalf("GOAWAY after an unknown frame")
				}
			})
			c.usable(5)
		}},
		{"CONTINUATION", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.hbuf.Reset()
			kv := get(c, "x-a", "1")
			for i := 0; i < len(kv); i += 2 {
				c.check(c.henc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]}))
			}
			block := bytes.Clone(c.hbuf.Bytes())
			c.check(c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:3], EndStream: true}))
			c.check(c.fr.WriteContinuation(1, false, block[3:5]))
			c.check(c.fr.WriteContinuation(1, true, block[5:]))
			c.expectOK("ok", 1)
		}},
		{"padded DATA", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.request(1, "POST", "/echo", false)
			c.check(c.fr.WriteDataPadded(1, false, []byte("abc"), make([]byte, 200)))
			c.check(c.fr.WriteDataPadded(1, true, []byte("def"), make([]byte, 3)))
			c.expectOK("abcdef", 1)
		}},
		{"client GOAWAY closes an idle connection", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			c.usable(1)
			c.check(c.fr.WriteGoAway(0, http2.ErrCodeNo, nil))
			c.expectClosed()
		}},
		{"header list over MaxHeaderBytes gets 431", func(hs *http.Server) { hs.MaxHeaderBytes = 1000 }, func(t *testing.T, c *rawConn, e *protoEnv) {
			var extra []string
			for i := range 12 {
				extra = append(extra, fmt.Sprintf("x-h%d", i), strings.Repeat("v", 80))
			}
			c.headers(1, true, get(c, extra...)...)
			r := c.readResponse(1)
			if r.rst != nil || r.status != "431" || len(r.body) != 0 {
				t.Fatalf("status %q body %q rst %v, want 431 without body", r.status, r.body, r.rst)
			}
			// The handler did not run; a request under the limit is served.
			c.usable(3)
			if p := recv(t, e.started, "the handler"); p != "/" {
				t.Errorf("handler ran for %q", p)
			}
			if len(e.started) != 0 {
				t.Errorf("the handler ran for the refused request")
			}
		}},
		{"streams past SETTINGS_MAX_CONCURRENT_STREAMS are refused", nil, func(t *testing.T, c *rawConn, e *protoEnv) {
			for i := range maxStreams {
				c.get(uint32(2*i+1), "/block")
			}
			for range maxStreams {
				recv(t, e.started, "the handlers")
			}
			c.get(2*maxStreams+1, "/")
			c.expectRST(2*maxStreams+1, http2.ErrCodeRefusedStream)
			// Once one ends, a new stream is served.
			c.check(c.fr.WriteRSTStream(1, http2.ErrCodeCancel))
			recv(t, e.canceled, "the handler's context")
			waitUntil(t, "the reset stream is forgotten", func() bool {
				cs := e.ts.serverConns()
				if len(cs) != 1 {
					return false
				}
				cs[0].mu.Lock()
				defer cs[0].mu.Unlock()
				return len(cs[0].streams) < maxStreams
			})
			c.usable(2*maxStreams + 3)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var configure []func(*http.Server)
			if tt.configure != nil {
				configure = append(configure, tt.configure)
			}
			e := newProtoEnv(t, configure...)
			tt.run(t, e.ts.dial(t), e)
		})
	}
}

// --- Shutdown, close and timeouts ---

// TestShutdownGraceful: Shutdown sends GOAWAY, lets the stream in flight
// finish, refuses new ones, and returns only after the handler has.
func TestShutdownGraceful(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	var handlerDone atomic.Bool
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer handlerDone.Store(true)
		if r.URL.Path == "/slow" {
			started <- struct{}{}
			<-release
		}
		io.WriteString(w, "finished")
	}))
	c := ts.dial(t)
	c.get(1, "/slow")
	recv(t, started, "the handler")

	type result struct {
		err         error
		handlerDone bool
	}
	shut := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		err := ts.hs.Shutdown(ctx)
		shut <- result{err, handlerDone.Load()}
	}()
	var g *http2.GoAwayFrame
	c.readUntil(func(f http2.Frame) bool {
		g, _ = f.(*http2.GoAwayFrame)
		return g != nil
	})
	if g.ErrCode != http2.ErrCodeNo || g.LastStreamID != 1 {
		t.Fatalf("GOAWAY %v last stream %d, want NO_ERROR, 1", g.ErrCode, g.LastStreamID)
	}
	select {
	case r := <-shut:
		t.Fatalf("Shutdown returned (%v) with a request in flight", r.err)
	default:
	}
	// A stream opened after GOAWAY is not served, and its later frames
	// are ignored: taken for an idle stream's, they ended the connection
	// with the stream in flight.
	c.get(3, "/")
	c.request(5, http.MethodPost, "/", false)
	c.data(5, false, []byte("a body on its way"))
	c.check(c.fr.WriteWindowUpdate(5, 100))
	c.check(c.fr.WriteRSTStream(5, http2.ErrCodeCancel))
	close(release)
	c.expectOK("finished", 1)
	for _, fh := range append(c.others, c.expectClosed()...) {
		if fh.StreamID == 3 || fh.StreamID == 5 {
			t.Errorf("the server answered stream %d, opened after its GOAWAY: %v", fh.StreamID, fh)
		}
		if fh.Type == http2.FrameGoAway {
			t.Errorf("a second GOAWAY: %v", fh)
		}
	}
	for _, g := range c.goAways {
		t.Errorf("a second GOAWAY: %v", g.ErrCode)
	}
	r := recv(t, shut, "Shutdown")
	if r.err != nil {
		t.Errorf("Shutdown: %v", r.err)
	}
	if !r.handlerDone {
		t.Errorf("Shutdown returned before the handler did")
	}
}

// TestShutdownGoClient: a request in flight through net/http's client
// completes across Shutdown.
func TestShutdownGoClient(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-release
		io.WriteString(w, "finished")
	}))
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := ts.client(t).Get(ts.url("/"))
		if err != nil {
			res <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		res <- result{string(b), err}
	}()
	recv(t, started, "the handler")
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		shut <- ts.hs.Shutdown(ctx)
	}()
	// Shutdown has told the connection to go away before the release.
	waitUntil(t, "the connection goes away", func() bool {
		for _, c := range ts.serverConns() {
			c.mu.Lock()
			ga := c.goingAway
			c.mu.Unlock()
			return ga
		}
		return false
	})
	close(release)
	if r := recv(t, res, "the response"); r.err != nil || r.body != "finished" {
		t.Errorf("response %q, %v; want finished", r.body, r.err)
	}
	if err := recv(t, shut, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestCloseCancelsHandler: Close ends a connection whose handler is
// blocked, and the handler's context ends.
func TestCloseCancelsHandler(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	canceled := make(chan error, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		canceled <- awaitCancel(r)
	}))
	clientErr := make(chan error, 1)
	go func() {
		resp, err := ts.client(t).Get(ts.url("/"))
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	recv(t, started, "the handler")
	if err := ts.hs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, canceled, "the handler's context"); !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context: %v, want canceled", err)
	}
	if err := recv(t, clientErr, "the client"); err == nil {
		t.Errorf("the request succeeded across Close")
	}
	waitUntil(t, "the server forgets the connection", func() bool { return len(ts.serverConns()) == 0 })
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		requests int
	}{
		{"fresh connection", 0},
		{"after requests", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
				func(hs *http.Server) { hs.IdleTimeout = 200 * time.Millisecond })
			c := ts.dialEarly(t, func(c *rawConn) {
				for i := range tt.requests {
					c.get(uint32(2*i+1), "/")
				}
			})
			var ids []uint32
			for i := range tt.requests {
				ids = append(ids, uint32(2*i+1))
			}
			c.expectOK("ok", ids...)
			g := c.expectGoAway(http2.ErrCodeNo)
			if want := uint32(max(0, 2*tt.requests-1)); g.LastStreamID != want {
				t.Errorf("GOAWAY last stream %d, want %d", g.LastStreamID, want)
			}
		})
	}
}

// TestIdleTimeoutSparesActiveStreams: a stream outliving the idle timeout
// completes, and the connection goes away after it.
func TestIdleTimeoutSparesActiveStreams(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		io.WriteString(w, "ok")
	}), func(hs *http.Server) { hs.IdleTimeout = 100 * time.Millisecond })
	c := ts.dialEarly(t, func(c *rawConn) { c.get(1, "/") })
	// Sleeping past the idle timeout, so that it has fired.
	time.Sleep(300 * time.Millisecond)
	close(release)
	c.expectOK("ok", 1)
	if len(c.goAways) != 0 {
		t.Fatalf("GOAWAY %v while a stream was active", c.goAways[0].ErrCode)
	}
	c.expectGoAway(http2.ErrCodeNo)
}

// TestRequestBodyReadTimeout: a body that stops arriving fails the
// handler's Read once ReadTimeout has passed since the request began.
func TestRequestBodyReadTimeout(t *testing.T) {
	t.Parallel()
	type result struct {
		body string
		err  error
	}
	tests := []struct {
		name, path, sent string
	}{
		{"no body", "/none", ""},
		{"part of a body", "/part", "partial"},
	}
	res := map[string]chan result{}
	for _, tt := range tests {
		res[tt.path] = make(chan result, 1)
	}
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		res[r.URL.Path] <- result{string(b), err}
		w.WriteHeader(http.StatusRequestTimeout)
	}), func(hs *http.Server) { hs.ReadTimeout = 400 * time.Millisecond })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ts.dialEarly(t, func(c *rawConn) {
				c.request(1, "POST", tt.path, false)
				if tt.sent != "" {
					c.data(1, false, []byte(tt.sent))
				}
			})
			r := recv(t, res[tt.path], "the handler's Read")
			if r.err == nil || r.body != tt.sent {
				t.Fatalf("Read got %q, %v; want %q and an error", r.body, r.err, tt.sent)
			}
			resp := c.readResponse(1)
			if resp.status != "408" {
				t.Fatalf("status %q, want 408", resp.status)
			}
			// The body never ended: the server stops it.
			c.expectRST(1, http2.ErrCodeNo)
		})
	}
}

// --- Behaviours that were once wrong, each kept by its test. ---

// TestShortWriteTimeout: with WriteTimeout under a second, a write long
// after the last one still gets its deadline moved (writeLocked moves it
// once it has run down by a quarter), rather than failing at once and
// killing the connection.
func TestShortWriteTimeout(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		func(hs *http.Server) { hs.WriteTimeout = 200 * time.Millisecond })
	c := ts.dial(t)
	c.usable(1)
	// Past the 200 ms deadline of the last write, but well within the
	// second in which it is not moved.
	time.Sleep(500 * time.Millisecond)
	c.usable(3)
}

// TestWindowTimeoutResetsStream: a response that waits for window longer
// than WriteTimeout is given up on with RST_STREAM, so the client's stream
// does not stay open until the connection closes.
func TestWindowTimeoutResetsStream(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") }),
		func(hs *http.Server) {
			hs.WriteTimeout = time.Second           // the wait for window gives up after it
			hs.IdleTimeout = 300 * time.Millisecond // then the connection goes away
		})
	c := ts.dialEarly(t, func(c *rawConn) { c.get(1, "/") }, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	ended := false
	for _, f := range c.expectClosed() {
		if f.StreamID == 1 && (f.Type == http2.FrameRSTStream || f.Type == http2.FrameData && f.Flags.Has(http2.FlagDataEndStream)) {
			ended = true
		}
	}
	if !ended {
		t.Fatalf("stream 1 was neither ended nor reset before the connection closed")
	}
}

// TestContentLengthMismatch: RFC 9113 section 8.1.1 makes a request whose
// DATA adds up to other than its content-length malformed (a stream error
// PROTOCOL_ERROR); the handler must not get it as complete.
func TestContentLengthMismatch(t *testing.T) {
	t.Parallel()
	type result struct {
		body string
		err  error
	}
	res := make(chan result, 1)
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		res <- result{string(b), err}
	}))
	tests := []struct {
		name, contentLength, body string
	}{
		{"shorter than declared", "10", "hello"},
		{"longer than declared", "2", "hello"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.request(1, "POST", "/", false, "content-length", tt.contentLength)
			c.data(1, true, []byte(tt.body))
			r := c.readResponse(1)
			got := recv(t, res, "the handler")
			if (r.rst == nil || *r.rst != http2.ErrCodeProtocol) && got.err == nil {
				t.Fatalf("content-length %s with %d bytes: the handler read %q without error and the stream was not reset",
					tt.contentLength, len(tt.body), got.body)
			}
		})
	}
}

// TestHEADHeadersMatchGET: net/http sends the same Content-Type for HEAD
// as for GET (RFC 9110, 9.3.2), sniffing what the handler writes, though
// HEAD's body is not sent.
func TestHEADHeadersMatchGET(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<!DOCTYPE html><html><body>hi</body></html>")
	}))
	client := ts.client(t)
	header := func(method string) http.Header {
		req, _ := http.NewRequest(method, ts.url("/"), nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.Header
	}
	get, head := header("GET"), header("HEAD")
	for _, k := range []string{"Content-Type", "Content-Length"} {
		if get.Get(k) != head.Get(k) {
			t.Errorf("%s: GET %q, HEAD %q", k, get.Get(k), head.Get(k))
		}
	}
}

// TestRequestBodyBufferBounded: a reader that stays one frame behind a
// client keeping the window full holds about a window's worth, not the
// whole body: push drops what was read before it grows the buffer.
func TestRequestBodyBufferBounded(t *testing.T) {
	t.Parallel()
	s := &Server{Logger: discardLogger}
	s.Configure(&http.Server{})
	client, server := net.Pipe()
	defer server.Close()
	go io.Copy(io.Discard, client) // the WINDOW_UPDATEs Read sends
	c := newConn(s, context.Background(), server, nil, http.NotFoundHandler())
	st := newStream(c, 1, 65535)
	const frame = 16 << 10
	data := pattern(frame)
	// The client sends while it has window, and the handler reads one
	// frame's worth after each frame: it is always one frame behind.
	if code := st.body.push(data, frame, false); code != http2.ErrCodeNo {
		t.Fatal(code)
	}
	p := make([]byte, frame)
	var read int
	for i := range 256 { // 4 MiB
		if code := st.body.push(data, frame, false); code != http2.ErrCodeNo {
			t.Fatalf("push %d: %v", i, code)
		}
		n, err := io.ReadFull(&st.body, p)
		if err != nil {
			t.Fatal(err)
		}
		read += n
	}
	st.body.mu.Lock()
	capacity, buffered := cap(st.body.buf), len(st.body.buf)-st.body.off
	st.body.mu.Unlock()
	if buffered != frame {
		t.Fatalf("%d bytes buffered, want %d", buffered, frame)
	}
	if capacity > 2*streamWindow {
		t.Fatalf("after %d bytes read with %d buffered, the buffer holds %d bytes: more than twice the %d window",
			read, buffered, capacity, streamWindow)
	}
}

// TestHandlerPanic: as net/http does (http.Handler's documentation), a
// handler's panic ends its own stream and the server goes on. The test
// runs the server in a child process, so that a crash is seen.
func TestHandlerPanic(t *testing.T) {
	if os.Getenv("H2_TEST_PANIC_CHILD") == "1" {
		panicChild(t)
		return
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHandlerPanic$", "-test.count=1")
	cmd.Env = append(os.Environ(), "H2_TEST_PANIC_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		t.Fatalf("a handler's panic took the server down (%v):\n%s", err, strings.Join(lines[:min(len(lines), 8)], "\n"))
	}
}

// panicChild is the child's side: a panicking request fails alone, and the
// server serves the next.
func panicChild(t *testing.T) {
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("handler bug")
		case "/abort":
			panic(http.ErrAbortHandler)
		}
		io.WriteString(w, "ok")
	}))
	client := ts.client(t)
	for _, path := range []string{"/panic", "/abort"} {
		if resp, err := client.Get(ts.url(path)); err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				t.Errorf("%s: 200 %q, want a failed request", path, b)
			}
		}
	}
	resp, err := client.Get(ts.url("/"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// TestShutdownBeforePreface: a connection Shutdown finds still waiting
// for the client's preface is closed without a GOAWAY: RFC 9113, 3.4
// requires the server's first frame to be SETTINGS.
func TestShutdownBeforePreface(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.NotFoundHandler())
	tc, err := tls.Dial("tcp", ts.addr, &tls.Config{RootCAs: ts.pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tc.SetDeadline(time.Now().Add(hangLimit))
	waitUntil(t, "the server serves the connection", func() bool { return len(ts.serverConns()) == 1 })
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
		defer cancel()
		shut <- ts.hs.Shutdown(ctx)
	}()
	fr := http2.NewFramer(nil, tc)
	f, err := fr.ReadFrame()
	if err == nil && f.Header().Type != http2.FrameSettings {
		t.Errorf("the server's first frame is %v, want SETTINGS (or nothing)", f.Header())
	}
	if err := recv(t, shut, "Shutdown"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// hookCtx is a connection context whose derived contexts, when canceled,
// call onStop: context.WithCancel registers with a parent that has an
// AfterFunc method, and a child's cancel calls the stop function it got.
// A stream's context is such a child, canceled in endStream.
type hookCtx struct {
	context.Context
	onStop func()
}

func (h hookCtx) AfterFunc(f func()) func() bool {
	stop := context.AfterFunc(h.Context, f)
	return func() bool {
		h.onStop()
		return stop()
	}
}

// Value hides the embedded cancelCtx, which WithCancel would otherwise
// register with directly.
func (hookCtx) Value(any) any { return nil }

// TestStreamSlotFreedAtEndStream: a stream stops counting against
// SETTINGS_MAX_CONCURRENT_STREAMS when its END_STREAM goes out (RFC 9113,
// 5.1.2: a closed stream does not count), not later in endStream: a client
// that opens a stream as soon as it sees that END_STREAM is served. The
// test holds endStream after the END_STREAM through a hook in the
// stream's context.
func TestStreamSlotFreedAtEndStream(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	inGap, release := make(chan struct{}), make(chan struct{})
	base, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx := hookCtx{Context: base, onStop: func() {
		if armed.CompareAndSwap(true, false) {
			close(inGap)
			select {
			case <-release:
			case <-time.After(hangLimit):
			}
		}
	}}
	started := make(chan struct{}, maxStreams)
	s := &Server{Logger: discardLogger}
	s.Configure(&http.Server{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan struct{})
	go func() {
		defer close(served)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		s.ServeConn(ctx, nc, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				started <- struct{}{}
				<-r.Context().Done()
				return
			}
			io.WriteString(w, "ok")
		}))
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		nc.Close()
		<-served
	}()
	defer close(release) // before the wait for ServeConn, which waits for the hook
	c := newRawConn(t, nc, ln.Addr().String(), nil)
	for i := range maxStreams - 1 {
		c.get(uint32(2*i+1), "/block")
	}
	for range maxStreams - 1 {
		recv(t, started, "the handlers")
	}
	// The 100th stream completes; its END_STREAM closes it.
	armed.Store(true)
	last := uint32(2*maxStreams - 1)
	c.get(last, "/")
	c.expectOK("ok", last)
	recv(t, inGap, "the server to end the stream")
	// 99 streams are open: the client may open one more.
	c.get(last+2, "/")
	r := c.readResponse(last + 2)
	if r.rst != nil {
		t.Fatalf("a stream within the limit was reset with %v", *r.rst)
	}
}

// Test431ClosesStream: a request refused with 431 whose HEADERS ended the
// stream gets nothing after the 431's END_STREAM closed it (RFC 9113, 5.1:
// no frame but PRIORITY may be sent on a closed stream).
func Test431ClosesStream(t *testing.T) {
	t.Parallel()
	ts := startServer(t, http.NotFoundHandler(), func(hs *http.Server) { hs.MaxHeaderBytes = 1000 })
	c := ts.dial(t)
	c.request(1, "GET", "/", true, "x-big", strings.Repeat("v", 500), "x-big2", strings.Repeat("v", 500))
	r := c.readResponse(1)
	if r.status != "431" {
		t.Fatalf("status %q, want 431", r.status)
	}
	// The refusal and its stream's end run on the connection's reader
	// before it reads the PING: anything they send comes first.
	c.fence(func(f http2.Frame) {
		if f.Header().StreamID == 1 {
			t.Errorf("%v on stream 1 after its END_STREAM", f.Header())
		}
	})
}

// A response header's value goes unindexed the first time the connection
// sends it under its name, and indexed once it comes again: a value new in
// every response never enters either side's table.
func TestRepeatedHeaderValuesIndexed(t *testing.T) {
	var n atomic.Int64
	ts := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Same", "constant")
		w.Header().Set("X-Unique", "value-"+strconv.FormatInt(n.Add(1), 10))
	}))
	c := ts.dial(t)
	// unindexed[i] is whether response i sent each field never indexed.
	var unindexed []map[string]bool
	for i := range 3 {
		id := uint32(2*i + 1)
		c.get(id, "/")
		c.readUntil(func(f http2.Frame) bool {
			h, ok := f.(*http2.MetaHeadersFrame)
			if !ok || h.StreamID != id {
				return false
			}
			got := map[string]bool{}
			for _, hf := range h.Fields {
				got[hf.Name] = hf.Sensitive
			}
			unindexed = append(unindexed, got)
			return true
		})
	}
	for i, want := range []map[string]bool{
		{"x-same": true, "x-unique": true},
		{"x-same": false, "x-unique": true},
		{"x-same": false, "x-unique": true},
	} {
		for name, u := range want {
			if unindexed[i][name] != u {
				t.Errorf("response %d: %s never indexed %t, want %t", i+1, name, unindexed[i][name], u)
			}
		}
	}
}
