package h2

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

var (
	errStreamClosed = errors.New("h2: stream closed")
	errBodyClosed   = errors.New("h2: request body closed")
	errWindowWait   = errors.New("h2: the client's flow-control window stayed closed")
)

// stream is one request and its response.
type stream struct {
	c      *conn
	id     uint32
	ctx    context.Context
	cancel context.CancelFunc
	body   body
	// readTimer fails the body if it has not arrived in time; nil when
	// the request had none.
	readTimer *time.Timer

	// Guarded by c.mu.
	sendWindow int64
	rst        bool // reset on the wire, by either side: nothing more is sent
}

func newStream(c *conn, id uint32, window int64) *stream {
	st := &stream{c: c, id: id, sendWindow: window}
	st.ctx, st.cancel = context.WithCancel(c.ctx)
	st.body.st = st
	st.body.window = streamWindow
	st.body.declared = -1
	st.body.cond.L = &st.body.mu
	return st
}

// abort ends a stream that will not complete: its handler's context is
// canceled, its body fails with err and its writes stop.
func (st *stream) abort(err error) {
	st.c.mu.Lock()
	st.abortLocked(err)
	st.c.mu.Unlock()
}

func (st *stream) abortLocked(err error) {
	st.rst = true
	st.cancel()
	st.body.finish(err)
	st.c.wakeWindowWaitersLocked()
}

// body is a request's body as it arrives: frames are appended by the
// connection's reader and read by the handler, and the stream's window is
// returned to the client as the handler reads.
type body struct {
	st   *stream
	mu   sync.Mutex
	cond sync.Cond
	buf  []byte
	off  int
	// err is what Read returns once buf is drained: io.EOF after
	// END_STREAM, or why the body failed.
	err     error
	ended   bool  // END_STREAM arrived
	window  int64 // what the client may still send
	unacked int64 // bytes read whose window is not yet returned
	// declared is the request's content-length, -1 if it had none;
	// received counts the data bytes that came.
	declared, received int64
}

// push appends a DATA frame's data (its length on the wire n, with
// padding); end marks the body's end, by the frame or by trailers. It
// returns a stream error's code if the client overran the window or sent
// other than the content-length it declared.
func (b *body) push(data []byte, n int64, end bool) http2.ErrCode {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return http2.ErrCodeStreamClosed
	}
	if n > b.window {
		return http2.ErrCodeFlowControl
	}
	b.received += int64(len(data))
	if b.declared >= 0 && (b.received > b.declared || end && b.received != b.declared) {
		return http2.ErrCodeProtocol
	}
	b.window -= n
	// Padding counts against the window; it goes back with the next credit.
	b.unacked += n - int64(len(data))
	if b.err == nil {
		if b.off > 0 && len(b.buf)+len(data) > cap(b.buf) {
			// What was read goes, so the buffer holds at most what the
			// window lets the client send ahead.
			b.buf = b.buf[:copy(b.buf, b.buf[b.off:])]
			b.off = 0
		}
		b.buf = append(b.buf, data...)
	}
	if end {
		b.ended = true
		if b.err == nil {
			b.err = io.EOF
		}
	}
	b.cond.Broadcast()
	return http2.ErrCodeNo
}

// finish ends the body with err unless it has already ended.
func (b *body) finish(err error) {
	b.mu.Lock()
	if err == io.EOF {
		b.ended = true
	}
	if b.err == nil {
		b.err = err
	}
	b.cond.Broadcast()
	b.mu.Unlock()
}

// abandon drops what is buffered once the handler is done, and reports
// whether the client may still be sending the body.
func (b *body) abandon() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = errBodyClosed
	}
	b.buf, b.off = nil, 0
	return !b.ended
}

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	for b.off == len(b.buf) && b.err == nil {
		b.cond.Wait()
	}
	if b.off == len(b.buf) {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	if b.off == len(b.buf) {
		b.buf, b.off = b.buf[:0], 0
	}
	var credit int64
	if !b.ended {
		b.unacked += int64(n)
		if b.unacked >= streamWindow/4 {
			credit, b.unacked = b.unacked, 0
			b.window += credit
		}
	}
	b.mu.Unlock()
	if credit > 0 {
		c := b.st.c
		c.writeQuiet(func() error { return c.wfr.WriteWindowUpdate(b.st.id, uint32(credit)) })
	}
	return n, nil
}

// Close makes later reads fail; what the client still sends is dropped.
func (b *body) Close() error {
	b.mu.Lock()
	if b.err == nil || b.err == io.EOF {
		b.err = errBodyClosed
	}
	b.buf, b.off = nil, 0
	b.mu.Unlock()
	return nil
}

// newRequest builds the http.Request a HEADERS frame opens.
func (c *conn) newRequest(f *http2.MetaHeadersFrame, st *stream) (*http.Request, error) {
	var method, path, scheme, authority string
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method":
			method = hf.Value
		case ":path":
			path = hf.Value
		case ":scheme":
			scheme = hf.Value
		case ":authority":
			authority = hf.Value
		default:
			return nil, errors.New("unsupported pseudo-header " + hf.Name)
		}
	}
	if method == "" || path == "" || scheme == "" || method == http.MethodConnect {
		return nil, errors.New("a request needs :method, :path and :scheme, and CONNECT is not served")
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		// A path that is not a URI (a stray '%') goes to the handler as
		// it came, for it to refuse in its own terms, rather than the
		// stream being reset: the client then reads a reply.
		if !strings.HasPrefix(path, "/") {
			return nil, err
		}
		p, q, _ := strings.Cut(path, "?")
		u = &url.URL{Path: p, RawQuery: q}
	}
	fields := f.RegularFields()
	header := make(http.Header, len(fields))
	// One slice backs every header's first value, as most have one.
	values := make([]string, len(fields))
	var cookies []string
	for i, hf := range fields {
		switch hf.Name {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
			return nil, errors.New("connection-specific header " + hf.Name)
		case "te":
			if hf.Value != "trailers" {
				return nil, errors.New("te other than trailers")
			}
		case "cookie":
			cookies = append(cookies, hf.Value)
			continue
		}
		name := c.canonical(hf.Name)
		if vv, ok := header[name]; ok {
			header[name] = append(vv, hf.Value)
			continue
		}
		values[i] = hf.Value
		header[name] = values[i : i+1 : i+1]
	}
	if len(cookies) > 0 {
		header["Cookie"] = []string{strings.Join(cookies, "; ")}
	}
	if authority == "" {
		authority = header.Get("Host")
	}
	r := http.Request{
		Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: header,
		Host: authority, RequestURI: path, RemoteAddr: c.remote, TLS: c.tls, Body: http.NoBody,
	}
	if v := header.Get("Content-Length"); v != "" {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			return nil, errors.New("content-length is not a number")
		}
		if f.StreamEnded() && n > 0 {
			return nil, errors.New("content-length with no body")
		}
		st.body.declared = int64(n)
	}
	if !f.StreamEnded() {
		r.Body = &st.body
		r.ContentLength = st.body.declared
	}
	return r.WithContext(st.ctx), nil
}

// canonical is http.CanonicalHeaderKey(name), remembered per connection.
func (c *conn) canonical(name string) string {
	if cn, ok := c.names[name]; ok {
		return cn
	}
	cn := http.CanonicalHeaderKey(name)
	if len(c.names) < 256 {
		c.names[name] = cn
	}
	return cn
}

// reserve takes up to want bytes of the send windows, or 0 if either is
// closed.
func (c *conn) reserve(st *stream, want int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.rst || c.closed {
		return 0, errStreamClosed
	}
	n := min(int64(want), c.sendWindow, st.sendWindow)
	if n <= 0 {
		return 0, nil
	}
	c.sendWindow -= n
	st.sendWindow -= n
	return int(n), nil
}

// waitWindow waits until both of st's send windows are open.
func (c *conn) waitWindow(st *stream) error {
	c.mu.Lock()
	for {
		if st.rst || c.closed {
			c.mu.Unlock()
			return errStreamClosed
		}
		if c.sendWindow > 0 && st.sendWindow > 0 {
			c.mu.Unlock()
			return nil
		}
		grew := c.windowGrew
		c.windowWaiters++
		c.mu.Unlock()
		timer := time.NewTimer(c.srv.writeTimeout)
		var err error
		select {
		case <-grew:
		case <-st.ctx.Done():
			err = errStreamClosed
		case <-timer.C:
			err = errWindowWait
		}
		timer.Stop()
		c.mu.Lock()
		c.windowWaiters--
		if err != nil {
			c.mu.Unlock()
			return err
		}
	}
}

// sniffLen is how much of a body http.DetectContentType looks at.
const sniffLen = 512

// flushAt is how much of a response's body is buffered before it is sent:
// a body up to it goes out with its header block in one write, with its
// Content-Length.
const flushAt = 64 << 10

// responseWriter is a stream's http.ResponseWriter.
type responseWriter struct {
	st          *stream
	head        bool
	header      http.Header
	status      int
	wroteHeader bool
	sentHeader  bool
	done        bool  // the handler has returned
	written     int64 // body bytes the handler wrote
	buf         []byte
	err         error
}

func newResponseWriter(st *stream, method string) *responseWriter {
	return &responseWriter{st: st, head: method == http.MethodHead, header: http.Header{}}
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 || code > 999 {
		// Informational responses are not sent; other codes are
		// rejected as net/http rejects them.
		if code < 100 || code > 999 {
			w.st.c.srv.Logger.Debug("h2: invalid status code", "code", code)
		}
		return
	}
	w.wroteHeader = true
	w.status = code
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if w.err != nil {
		return 0, w.err
	}
	w.written += int64(len(p))
	if w.head {
		// The body is not sent, but its first bytes give the
		// Content-Type GET would have.
		if room := sniffLen - len(w.buf); room > 0 {
			w.buf = append(w.buf, p[:min(room, len(p))]...)
		}
		return len(p), nil
	}
	if w.buf == nil {
		if b, ok := bodyBuffers.Get().(*[]byte); ok {
			w.buf = *b
		}
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= flushAt {
		w.send(false)
	}
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// Flush sends the header block and what is buffered.
func (w *responseWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.send(false)
}

// finish sends what remains once the handler has returned, and ends the
// stream.
func (w *responseWriter) finish() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.done = true
	w.send(true)
	if w.err != nil && !errors.Is(w.err, errStreamClosed) {
		// Given up on (the client's window stayed shut): the client
		// learns the response will not complete.
		w.st.c.cancelStream(w.st, http2.ErrCodeCancel)
	}
	if w.buf != nil && cap(w.buf) <= 2*flushAt {
		b := w.buf[:0]
		bodyBuffers.Put(&b)
	}
	w.buf = nil
}

// bodyBuffers holds response buffers for reuse: a buffer is written out
// before its handler's stream ends, and nothing keeps it after.
var bodyBuffers sync.Pool

// send writes the buffered body, waiting for window as needed, with the
// header block first if it has not gone out; end ends the stream.
func (w *responseWriter) send(end bool) {
	c := w.st.c
	data := w.buf
	if w.head {
		data = nil
	}
	for w.err == nil {
		n, err := c.reserve(w.st, len(data))
		if err != nil {
			w.err = err
			break
		}
		chunk := data[:n]
		data = data[n:]
		last := end && len(data) == 0
		if last {
			c.releaseSlot(w.st)
		}
		if !w.sentHeader || len(chunk) > 0 || last {
			if err := c.write(func() error { return w.writeFrames(chunk, last) }); err != nil {
				w.err = err
				break
			}
			w.sentHeader = true
		}
		if len(data) == 0 {
			break
		}
		if err := c.waitWindow(w.st); err != nil {
			w.err = err
		}
	}
	w.buf = w.buf[:0]
}

// writeFrames writes the header block if it has not gone out, then chunk
// as DATA frames; last ends the stream. It runs under the write lock.
func (w *responseWriter) writeFrames(chunk []byte, last bool) error {
	c := w.st.c
	id := w.st.id
	if !w.sentHeader {
		block := w.encodeHeader()
		endStream := last && len(chunk) == 0
		first := true
		for first || len(block) > 0 {
			frag := block[:min(len(block), c.peerMaxData)]
			block = block[len(frag):]
			var err error
			if first {
				err = c.wfr.WriteHeaders(http2.HeadersFrameParam{
					StreamID: id, BlockFragment: frag, EndStream: endStream, EndHeaders: len(block) == 0,
				})
			} else {
				err = c.wfr.WriteContinuation(id, len(block) == 0, frag)
			}
			if err != nil {
				return err
			}
			first = false
		}
		if endStream {
			return nil
		}
	}
	if len(chunk) == 0 && last {
		return c.wfr.WriteData(id, true, nil)
	}
	for len(chunk) > 0 {
		n := min(len(chunk), c.peerMaxData)
		if err := c.wfr.WriteData(id, last && n == len(chunk), chunk[:n]); err != nil {
			return err
		}
		chunk = chunk[n:]
	}
	return nil
}

// encodeHeader encodes the status and header fields into c.hbuf, adding
// what net/http adds: Date, Content-Type sniffed from the body, and
// Content-Length when the whole body is known. It runs under the write
// lock.
func (w *responseWriter) encodeHeader() []byte {
	c := w.st.c
	c.hbuf.Reset()
	enc := func(name, value string, unindexed bool) {
		// Sensitive is HPACK's "never indexed" literal: the field goes
		// into neither this side's table nor the client's.
		if err := c.henc.WriteField(hpack.HeaderField{Name: name, Value: value, Sensitive: unindexed}); err != nil {
			// Writes to a bytes.Buffer do not fail.
			panic(err)
		}
	}
	enc(":status", statusText(w.status), false)
	allowed := bodyAllowed(w.status)
	for k, vv := range w.header {
		wn := c.wireNameOf(k)
		if wn.name == "" {
			continue
		}
		for _, v := range vv {
			if httpguts.ValidHeaderFieldValue(v) {
				// A value this name had in the last response is
				// likely the same in the next: it is indexed, and
				// goes as an index from then on. Another (an etag,
				// a session token, an activity id) is likely new in
				// every response, and indexing it would only push
				// entries out of both sides' tables, a map insertion
				// and deletion each.
				enc(wn.name, v, v != wn.last)
				wn.last = v
			}
		}
	}
	if _, ok := w.header["Date"]; !ok {
		enc("date", c.srv.dateHeader(), false)
	}
	if _, ok := w.header["Content-Type"]; !ok && allowed && len(w.buf) > 0 {
		enc("content-type", http.DetectContentType(w.buf[:min(len(w.buf), sniffLen)]), false)
	}
	if _, ok := w.header["Content-Length"]; !ok && allowed && w.done && (!w.head || w.written > 0) {
		enc("content-length", strconv.FormatInt(w.written, 10), false)
	}
	return c.hbuf.Bytes()
}

// wireName is what a connection knows of a response header's name.
type wireName struct {
	name string // on the wire, lower case; "" for a name that must not be sent over HTTP/2
	last string // the value last sent under it
}

// wireNameOf returns what the connection knows of a response header's
// name, remembered for up to 256 names. It runs under the write lock.
func (c *conn) wireNameOf(k string) *wireName {
	if wn, ok := c.lower[k]; ok {
		return wn
	}
	name := strings.ToLower(k)
	switch name {
	case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade", "te":
		name = ""
	default:
		if !httpguts.ValidHeaderFieldName(k) {
			name = ""
		}
	}
	wn := &wireName{name: name}
	if c.lower == nil {
		c.lower = map[string]*wireName{}
	}
	if len(c.lower) < 256 {
		c.lower[k] = wn
	}
	return wn
}

// statusTexts holds the :status values of the codes handlers use.
var statusTexts = func() []string {
	t := make([]string, 600)
	for i := range t {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusText(code int) string {
	if code < len(statusTexts) {
		return statusTexts[code]
	}
	return strconv.Itoa(code)
}
