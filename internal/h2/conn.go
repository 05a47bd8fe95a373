package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// errConnClosed ends the streams of a connection that closed under them.
var errConnClosed = errors.New("h2: connection closed")

// conn is one client connection. Its goroutine (serve) reads every frame;
// handlers write their responses themselves under wmu.
type conn struct {
	srv    *Server
	nc     net.Conn
	h      http.Handler
	ctx    context.Context
	tls    *tls.ConnectionState
	remote string
	br     *bufio.Reader // the reading side; serve's goroutine only
	fr     *http2.Framer

	// Header names seen on this connection, lower case to canonical, so
	// that a client's repeated headers cost a map lookup each.
	names map[string]string

	wmu         sync.Mutex // guards the writing side below and writes to nc
	bw          *bufio.Writer
	wfr         *http2.Framer
	henc        *hpack.Encoder
	hbuf        bytes.Buffer
	lower       map[string]*wireName // response header names on the wire; see wireNameOf
	peerMaxData int                  // the client's SETTINGS_MAX_FRAME_SIZE
	deadline    time.Time            // the write deadline last set on nc
	settingsOut bool                 // this side's SETTINGS, its first frame, has been sent
	writeErr    error                // once a write fails, every later one does

	mu            sync.Mutex // guards the streams and the send windows below
	streams       map[uint32]*stream
	maxStreamID   uint32 // the highest stream the client has opened
	ignoredID     uint32 // the highest stream opened past the GOAWAY's last, and ignored
	sendWindow    int64  // what the connection may still send
	initialWindow int64  // the client's SETTINGS_INITIAL_WINDOW_SIZE
	windowWaiters int
	windowGrew    chan struct{} // closed, and replaced, when a send window grows
	goingAway     bool          // GOAWAY sent or received: no new streams
	closed        bool
	idle          *time.Timer

	connUnacked uint32 // received bytes whose connection credit is not yet returned; serve only

	handlers sync.WaitGroup
}

func newConn(s *Server, ctx context.Context, nc net.Conn, state *tls.ConnectionState, h http.Handler) *conn {
	c := &conn{
		srv: s, nc: nc, h: h, ctx: ctx, tls: state, remote: nc.RemoteAddr().String(),
		names:         map[string]string{},
		streams:       map[uint32]*stream{},
		sendWindow:    65535,
		initialWindow: 65535,
		peerMaxData:   16 << 10,
		windowGrew:    make(chan struct{}),
	}
	c.br = bufio.NewReaderSize(nc, 16<<10)
	c.fr = http2.NewFramer(nil, c.br)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.ReadMetaHeaders.SetMaxStringLength(int(s.maxHeaderBytes))
	c.fr.MaxHeaderListSize = s.maxHeaderBytes
	c.fr.SetMaxReadFrameSize(maxReadFrame)
	c.fr.SetReuseFrames()
	c.bw = bufio.NewWriterSize(nc, writeBuffer)
	c.wfr = http2.NewFramer(c.bw, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	return c
}

// serve reads the connection until it ends, then ends its streams and
// waits for their handlers.
func (c *conn) serve() {
	defer c.close()
	if err := c.readPreface(); err != nil {
		c.srv.Logger.Debug("h2: no client preface", "remote", c.remote, "err", err)
		return
	}
	err := c.write(func() error {
		if err := c.wfr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: maxStreams},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamWindow},
			http2.Setting{ID: http2.SettingMaxFrameSize, Val: maxReadFrame},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.srv.maxHeaderBytes},
		); err != nil {
			return err
		}
		c.settingsOut = true
		return c.wfr.WriteWindowUpdate(0, connWindow-65535)
	})
	if err != nil {
		return
	}
	c.mu.Lock()
	c.idle = time.AfterFunc(c.srv.idleTimeout, c.onIdle)
	c.mu.Unlock()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.noteStream(se.StreamID)
				c.resetStream(se.StreamID, se.Code)
				continue
			}
			var ce http2.ConnectionError
			switch {
			case errors.As(err, &ce):
				c.sendGoAway(http2.ErrCode(ce))
			case errors.Is(err, http2.ErrFrameTooLarge):
				c.sendGoAway(http2.ErrCodeFrameSize)
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.srv.Logger.Debug("h2: connection ends", "remote", c.remote, "err", err)
			}
			return
		}
		if code, err := c.process(f); err != nil {
			c.srv.Logger.Debug("h2: protocol error", "remote", c.remote, "err", err)
			c.sendGoAway(code)
			return
		}
	}
}

func (c *conn) readPreface() error {
	if err := c.nc.SetReadDeadline(c.srv.Clock.Now().Add(c.srv.prefaceTimeout)); err != nil {
		return err
	}
	buf := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return err
	}
	if string(buf) != http2.ClientPreface {
		return errors.New("bad preface")
	}
	return c.nc.SetReadDeadline(time.Time{})
}

// process handles one frame. An error ends the connection with its code.
func (c *conn) process(f http2.Frame) (http2.ErrCode, error) {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.processHeaders(f)
	case *http2.DataFrame:
		return c.processData(f)
	case *http2.WindowUpdateFrame:
		return c.processWindowUpdate(f)
	case *http2.SettingsFrame:
		return c.processSettings(f)
	case *http2.PingFrame:
		if f.StreamID != 0 {
			return http2.ErrCodeProtocol, errors.New("PING on a stream")
		}
		if !f.IsAck() {
			data := f.Data
			c.writeQuiet(func() error { return c.wfr.WritePing(true, data) })
		}
	case *http2.RSTStreamFrame:
		c.mu.Lock()
		if f.StreamID == 0 || c.idleLocked(f.StreamID) {
			c.mu.Unlock()
			return http2.ErrCodeProtocol, errors.New("RST_STREAM on an idle stream")
		}
		st := c.streams[f.StreamID]
		c.mu.Unlock()
		if st != nil {
			st.abort(fmt.Errorf("h2: stream reset by the client (%v)", f.ErrCode))
		}
	case *http2.GoAwayFrame:
		c.mu.Lock()
		c.goingAway = true
		done := len(c.streams) == 0
		c.mu.Unlock()
		if done {
			c.nc.Close()
		}
	case *http2.PushPromiseFrame:
		return http2.ErrCodeProtocol, errors.New("PUSH_PROMISE from a client")
	}
	// PRIORITY and frames of unknown types are ignored.
	return 0, nil
}

// idleLocked reports whether the client has not opened stream id: neither
// one this side served nor one it ignored past a GOAWAY.
func (c *conn) idleLocked(id uint32) bool {
	return id > c.maxStreamID && id > c.ignoredID
}

// noteStream records that the client used stream id, so that GOAWAY names
// it and its later frames are not taken for an idle stream's.
func (c *conn) noteStream(id uint32) {
	c.mu.Lock()
	if id%2 == 1 && id > c.maxStreamID {
		c.maxStreamID = id
	}
	c.mu.Unlock()
}

func (c *conn) processHeaders(f *http2.MetaHeadersFrame) (http2.ErrCode, error) {
	id := f.StreamID
	if id%2 == 0 {
		return http2.ErrCodeProtocol, errors.New("HEADERS on an even stream")
	}
	c.mu.Lock()
	if id <= c.maxStreamID {
		st := c.streams[id]
		c.mu.Unlock()
		if st == nil {
			// A stream this side already ended; its trailers are ignored.
			return 0, nil
		}
		if !f.StreamEnded() {
			return http2.ErrCodeProtocol, errors.New("second HEADERS without END_STREAM")
		}
		// Trailers: the body is complete; their fields are not kept.
		if code := st.body.push(nil, 0, true); code != http2.ErrCodeNo {
			c.resetStream(id, code)
		}
		return 0, nil
	}
	if c.goingAway || c.closed {
		// Past the GOAWAY's last stream: the client retries elsewhere.
		// Its later frames are ignored too, not taken for an idle
		// stream's, which would end the connection and the streams
		// still being answered on it (RFC 9113, 6.8).
		c.ignoredID = max(c.ignoredID, id)
		c.mu.Unlock()
		return 0, nil
	}
	c.maxStreamID = id
	if len(c.streams) >= maxStreams {
		c.mu.Unlock()
		c.resetStream(id, http2.ErrCodeRefusedStream)
		return 0, nil
	}
	st := newStream(c, id, c.initialWindow)
	c.streams[id] = st
	c.mu.Unlock()
	if f.StreamEnded() {
		st.body.finish(io.EOF)
	}

	if f.Truncated {
		c.refuse(st, http.StatusRequestHeaderFieldsTooLarge)
		return 0, nil
	}
	req, err := c.newRequest(f, st)
	if err != nil {
		c.srv.Logger.Debug("h2: bad request headers", "remote", c.remote, "err", err)
		c.resetStream(id, http2.ErrCodeProtocol)
		c.endStream(st)
		return 0, nil
	}
	if !f.StreamEnded() {
		st.readTimer = time.AfterFunc(c.srv.readTimeout, func() {
			st.body.finish(errors.New("h2: request body timed out"))
		})
	}
	c.handlers.Add(1)
	c.srv.workers.run(func() { c.runHandler(st, req) })
	return 0, nil
}

func (c *conn) processData(f *http2.DataFrame) (http2.ErrCode, error) {
	id := f.StreamID
	n := f.Header().Length
	c.returnConnCredit(n)
	c.mu.Lock()
	if id == 0 || c.idleLocked(id) {
		c.mu.Unlock()
		return http2.ErrCodeProtocol, errors.New("DATA on an idle stream")
	}
	st := c.streams[id]
	c.mu.Unlock()
	if st == nil {
		// A stream this side ended or reset: its frames are ignored
		// (RFC 9113, 5.4.2), their connection credit returned above.
		return 0, nil
	}
	data := f.Data()
	if code := st.body.push(data, int64(n), f.StreamEnded()); code != http2.ErrCodeNo {
		c.resetStream(id, code)
		return 0, nil
	}
	if f.StreamEnded() && st.readTimer != nil {
		st.readTimer.Stop()
	}
	return 0, nil
}

// returnConnCredit returns n received bytes to the connection's window,
// once a quarter of the window has come in: what a connection buffers is
// bounded by its streams' windows instead.
func (c *conn) returnConnCredit(n uint32) {
	c.connUnacked += n
	if c.connUnacked < connWindow/4 {
		return
	}
	inc := c.connUnacked
	c.connUnacked = 0
	c.writeQuiet(func() error { return c.wfr.WriteWindowUpdate(0, inc) })
}

func (c *conn) processWindowUpdate(f *http2.WindowUpdateFrame) (http2.ErrCode, error) {
	c.mu.Lock()
	if f.StreamID == 0 {
		c.sendWindow += int64(f.Increment)
		if c.sendWindow > 1<<31-1 {
			c.mu.Unlock()
			return http2.ErrCodeFlowControl, errors.New("connection window overflow")
		}
		c.wakeWindowWaitersLocked()
		c.mu.Unlock()
		return 0, nil
	}
	if c.idleLocked(f.StreamID) {
		c.mu.Unlock()
		return http2.ErrCodeProtocol, errors.New("WINDOW_UPDATE on an idle stream")
	}
	st := c.streams[f.StreamID]
	if st == nil {
		c.mu.Unlock()
		return 0, nil
	}
	st.sendWindow += int64(f.Increment)
	overflow := st.sendWindow > 1<<31-1
	if overflow {
		st.abortLocked(errors.New("h2: stream window overflow"))
	}
	c.wakeWindowWaitersLocked()
	c.mu.Unlock()
	if overflow {
		c.resetStream(f.StreamID, http2.ErrCodeFlowControl)
	}
	return 0, nil
}

func (c *conn) wakeWindowWaitersLocked() {
	if c.windowWaiters > 0 {
		close(c.windowGrew)
		c.windowGrew = make(chan struct{})
	}
}

func (c *conn) processSettings(f *http2.SettingsFrame) (http2.ErrCode, error) {
	if f.IsAck() {
		return 0, nil
	}
	var code http2.ErrCode
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				code = http2.ErrCode(ce)
			}
			return err
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			c.mu.Lock()
			defer c.mu.Unlock()
			delta := int64(s.Val) - c.initialWindow
			c.initialWindow = int64(s.Val)
			for _, st := range c.streams {
				st.sendWindow += delta
				if st.sendWindow > 1<<31-1 {
					code = http2.ErrCodeFlowControl
					return errors.New("a stream's window overflows")
				}
			}
			c.wakeWindowWaitersLocked()
		case http2.SettingMaxFrameSize:
			c.wmu.Lock()
			c.peerMaxData = int(s.Val)
			c.wmu.Unlock()
		case http2.SettingHeaderTableSize:
			c.wmu.Lock()
			c.henc.SetMaxDynamicTableSizeLimit(s.Val)
			c.wmu.Unlock()
		}
		return nil
	})
	if err != nil {
		return code, err
	}
	c.writeQuiet(func() error { return c.wfr.WriteSettingsAck() })
	return 0, nil
}

// refuse answers a stream with status and no body, without its handler.
func (c *conn) refuse(st *stream, status int) {
	w := newResponseWriter(st, http.MethodGet)
	w.WriteHeader(status)
	w.finish()
	c.endStream(st)
}

func (c *conn) runHandler(st *stream, req *http.Request) {
	defer c.handlers.Done()
	defer func() {
		// As net/http's servers do, a handler's panic ends its own
		// stream only; http.ErrAbortHandler is the quiet way to do it.
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				c.srv.Logger.Error("h2: handler panicked", "method", req.Method, "path", req.URL.Path,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			c.cancelStream(st, http2.ErrCodeInternal)
			c.endStream(st)
		}
	}()
	w := newResponseWriter(st, req.Method)
	c.h.ServeHTTP(w, req)
	w.finish()
	c.endStream(st)
}

// endStream forgets a stream whose response is complete (or abandoned). A
// request body the handler left unread is refused with RST_STREAM, so the
// client stops sending it.
func (c *conn) endStream(st *stream) {
	if st.readTimer != nil {
		st.readTimer.Stop()
	}
	st.cancel()
	unread := st.body.abandon()
	c.mu.Lock()
	unread = unread && !st.rst
	delete(c.streams, st.id)
	last := len(c.streams) == 0
	closeNow := last && c.goingAway
	if last && c.idle != nil && !c.closed {
		c.idle.Reset(c.srv.idleTimeout)
	}
	c.mu.Unlock()
	if unread {
		c.resetStream(st.id, http2.ErrCodeNo)
	}
	if closeNow {
		c.closeSocket()
	}
}

// onIdle closes a connection that has had no stream for the idle timeout.
func (c *conn) onIdle() {
	c.mu.Lock()
	idle := len(c.streams) == 0 && !c.closed
	c.mu.Unlock()
	if idle {
		c.goAway()
	}
}

// goAway announces that no new stream will be served, and closes the
// connection once the streams in flight are done.
func (c *conn) goAway() {
	c.mu.Lock()
	if c.goingAway || c.closed {
		c.mu.Unlock()
		return
	}
	c.goingAway = true
	done := len(c.streams) == 0
	c.mu.Unlock()
	c.sendGoAway(http2.ErrCodeNo)
	if done {
		c.closeSocket()
	}
}

func (c *conn) sendGoAway(code http2.ErrCode) {
	c.mu.Lock()
	last := c.maxStreamID
	c.mu.Unlock()
	c.writeQuiet(func() error {
		if !c.settingsOut {
			// A server's first frame must be SETTINGS (RFC 9113, 3.4):
			// before it, the connection is only closed.
			return nil
		}
		return c.wfr.WriteGoAway(last, code, nil)
	})
}

// closeSocket closes the socket, after any write in progress; serve's
// read then fails and it ends.
func (c *conn) closeSocket() {
	c.wmu.Lock()
	c.nc.Close()
	c.wmu.Unlock()
}

// cancelStream resets a stream this side gives up on, unless it has been
// reset already.
func (c *conn) cancelStream(st *stream, code http2.ErrCode) {
	c.mu.Lock()
	if st.rst {
		c.mu.Unlock()
		return
	}
	st.abortLocked(fmt.Errorf("h2: stream reset (%v)", code))
	c.mu.Unlock()
	c.writeQuiet(func() error { return c.wfr.WriteRSTStream(st.id, code) })
}

// releaseSlot stops counting st against the concurrent streams, as its
// last frame goes out: a client may open another as soon as it sees it.
func (c *conn) releaseSlot(st *stream) {
	c.mu.Lock()
	delete(c.streams, st.id)
	c.mu.Unlock()
}

// resetStream sends RST_STREAM; a stream still open is aborted first.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	if st := c.streams[id]; st != nil && !st.rst {
		st.abortLocked(fmt.Errorf("h2: stream reset (%v)", code))
	}
	c.mu.Unlock()
	c.writeQuiet(func() error { return c.wfr.WriteRSTStream(id, code) })
}

// close ends every stream (their handlers see their contexts canceled and
// their bodies fail) and waits for the handlers.
func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	for _, st := range c.streams {
		st.abortLocked(errConnClosed)
	}
	c.wakeWindowWaitersLocked()
	if c.idle != nil {
		c.idle.Stop()
	}
	c.mu.Unlock()
	c.nc.Close()
	c.handlers.Wait()
}

// write runs fn, which writes frames through wfr, under the write lock, and
// flushes them to the socket in one write.
func (c *conn) write(fn func() error) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(fn)
}

func (c *conn) writeLocked(fn func() error) error {
	if c.writeErr != nil {
		return c.writeErr
	}
	// The deadline is moved once it has run down by a quarter of the
	// timeout (a second at most), not on every write: each move costs a
	// timer update.
	slack := min(time.Second, c.srv.writeTimeout/4)
	if now := c.srv.Clock.Now(); c.deadline.Sub(now) < c.srv.writeTimeout-slack {
		c.deadline = now.Add(c.srv.writeTimeout)
		if err := c.nc.SetWriteDeadline(c.deadline); err != nil {
			c.writeErr = err
			return err
		}
	}
	err := fn()
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.writeErr = err
		// A half-written frame leaves the connection unusable.
		c.nc.Close()
	}
	return err
}

// writeQuiet writes frames whose failure the reader learns of anyway, on
// its next read of the closed connection.
func (c *conn) writeQuiet(fn func() error) {
	if err := c.write(fn); err != nil {
		c.srv.Logger.Debug("h2: write failed", "remote", c.remote, "err", err)
	}
}
