package integration

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// A request refused before its body is read (here a signature that does
// not match), over HTTP/1.1 with Connection: close, as Python's urllib
// sends it: the client sends its whole body and gets the refusal, not a
// reset while it still sends (urllib then reports the reset, never the
// reply).
func TestRefusalBeforeTheBodyReachesTheClient(t *testing.T) {
	e := start(t)
	u, err := url.Parse(e.url)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"id":"a","pk":"p","pad":"` + strings.Repeat("x", 600<<10) + `"}`
	for i := range 3 {
		conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		date := time.Now().UTC().Format(http.TimeFormat)
		req := fmt.Sprintf("POST /dbs/d/colls/c/docs HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nx-ms-date: %s\r\nx-ms-version: 2020-11-05\r\n"+
			"Authorization: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
			u.Host, date, url.QueryEscape("type=master&ver=1.0&sig=bm90IGEgc2lnbmF0dXJl"), len(body))
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
		// The body goes in pieces, as from a slow client, so that the
		// server answers while some of it is still on its way, and
		// longer than Go's server waits after a reply before it closes.
		werr := func() error {
			if _, err := conn.Write([]byte(req)); err != nil {
				return err
			}
			for b := []byte(body); len(b) > 0; {
				n := min(len(b), 64<<10)
				if _, err := conn.Write(b[:n]); err != nil {
					return err
				}
				b = b[n:]
				time.Sleep(80 * time.Millisecond)
			}
			return nil
		}()
		resp, rerr := http.ReadResponse(bufio.NewReader(conn), nil)
		if rerr != nil {
			conn.Close()
			t.Fatalf("request %d: no reply (write: %v, read: %v)", i, werr, rerr)
		}
		resp.Body.Close()
		conn.Close()
		if resp.StatusCode != http.StatusUnauthorized || werr != nil {
			t.Fatalf("request %d: %d, want 401; the body could not all be sent: %v", i, resp.StatusCode, werr)
		}
	}
}
