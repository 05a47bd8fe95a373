package h2

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// fuzzSeed builds a frame sequence with a Framer and an hpack encoder.
func fuzzSeed(build func(fr *http2.Framer, hdr func(...string) []byte)) []byte {
	var out, hbuf bytes.Buffer
	fr := http2.NewFramer(&out, nil)
	enc := hpack.NewEncoder(&hbuf)
	hdr := func(kv ...string) []byte {
		hbuf.Reset()
		for i := 0; i < len(kv); i += 2 {
			enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
		}
		return bytes.Clone(hbuf.Bytes())
	}
	build(fr, hdr)
	return out.Bytes()
}

func fuzzSeeds() [][]byte {
	get := []string{":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", "/"}
	post := []string{":method", "POST", ":scheme", "https", ":authority", "a.test", ":path", "/upload", "content-length", "5"}
	big := []string{":method", "GET", ":scheme", "https", ":authority", "a.test", ":path", "/big"}
	return [][]byte{
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr(get...), EndStream: true, EndHeaders: true})
			fr.WritePing(false, [8]byte{1, 2, 3})
			fr.WriteWindowUpdate(0, 1000)
			fr.WriteSettingsAck()
		}),
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr(post...), EndHeaders: true})
			fr.WriteData(1, false, []byte("hel"))
			fr.WriteDataPadded(1, true, []byte("lo"), make([]byte, 4))
			fr.WriteWindowUpdate(1, 100)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hdr(get...), EndStream: true, EndHeaders: true})
			fr.WriteRSTStream(3, http2.ErrCodeCancel)
		}),
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			// A header block split over CONTINUATION, trailers, a reset
			// body and GOAWAY.
			block := hdr(append(post, "cookie", "a=1", "cookie", "b=2")...)
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:4]})
			fr.WriteContinuation(1, true, block[4:])
			fr.WriteData(1, false, []byte("abc"))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr("x-trailer", "t"), EndStream: true, EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hdr(post...), EndHeaders: true})
			fr.WriteRSTStream(3, http2.ErrCodeCancel)
			fr.WriteData(3, true, []byte("late"))
			fr.WriteGoAway(3, http2.ErrCodeNo, nil)
		}),
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			// A response waiting for window, which opens and closes.
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0},
				http2.Setting{ID: http2.SettingMaxFrameSize, Val: 20000},
				http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr(big...), EndStream: true, EndHeaders: true})
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 30000})
			fr.WriteWindowUpdate(1, 50000)
			fr.WriteWindowUpdate(0, 50000)
			fr.WritePriority(5, http2.PriorityParam{StreamDep: 1, Weight: 3})
		}),
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			// Header lists over the limit, connection headers, an
			// unknown frame type.
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr(append(get, "x-big", strings.Repeat("v", 5000))...), EndStream: true, EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: hdr(append(get, "connection", "close")...), EndStream: true, EndHeaders: true})
			fr.WriteRawFrame(0xfa, 0, 0, []byte("unknown"))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2, BlockFragment: hdr(get...), EndStream: true, EndHeaders: true})
		}),
		fuzzSeed(func(fr *http2.Framer, hdr func(...string) []byte) {
			// A body that never ends: the handler reads until the
			// connection closes.
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hdr(post...), EndHeaders: true})
			fr.WriteData(1, false, []byte("he"))
		}),
		{},
	}
}

// FuzzServeConn feeds frames after the client's preface to a connection:
// whatever they are, the server must not panic, and must return once the
// client closes.
func FuzzServeConn(f *testing.F) {
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/big" {
			// More than the default window: the response waits for it.
			w.Write(make([]byte, 70000))
			return
		}
		io.WriteString(w, "ok")
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		s := &Server{Logger: discardLogger}
		// The timeouts outlast the wait below, so that none of them can
		// end a hang that closing the connection should have ended.
		s.Configure(&http.Server{
			ReadHeaderTimeout: time.Minute,
			ReadTimeout:       time.Minute,
			WriteTimeout:      time.Minute,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    4096,
		})
		client, server := net.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.ServeConn(context.Background(), server, nil, handler)
		}()
		go io.Copy(io.Discard, client) // the server's frames
		// A server that stops reading makes the write fail, not hang.
		client.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(client, http2.ClientPreface); err == nil {
			client.Write(in)
		}
		client.Close()
		timer := time.NewTimer(5 * time.Second)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			t.Fatalf("ServeConn did not return after the client closed")
		}
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d connections still tracked after ServeConn returned", n)
		}
	})
}
