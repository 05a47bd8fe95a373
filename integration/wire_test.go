package integration

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// wireResponse is a response as it was on the wire: header lines exactly as
// spelled, so lookups are case-sensitive the way some clients' are.
type wireResponse struct {
	status int
	lines  map[string]string // header name as sent → value
	body   []byte
}

// doWire sends one signed request over a fresh HTTP/1.1 connection and
// reads the response without canonicalising its header names.
func (e *env) doWire(method, path string, body []byte, headers map[string]string) wireResponse {
	e.t.Helper()
	u, err := url.Parse(e.url)
	if err != nil {
		e.t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	date := time.Now().UTC().Format(http.TimeFormat)
	typ, link := resourceOf(path)
	var req strings.Builder
	fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nx-ms-date: %s\r\nx-ms-version: 2018-12-31\r\nAuthorization: %s\r\nContent-Length: %d\r\n",
		method, path, u.Host, date, signature(method, typ, link, date, emulatorKey), len(body))
	for k, v := range headers {
		fmt.Fprintf(&req, "%s: %s\r\n", k, v)
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(conn, req.String()+string(body)); err != nil {
		e.t.Fatal(err)
	}
	r := textproto.NewReader(bufio.NewReader(conn))
	status, err := r.ReadLine()
	if err != nil {
		e.t.Fatal(err)
	}
	f := strings.Fields(status)
	if len(f) < 2 || f[0] != "HTTP/1.1" {
		e.t.Fatalf("status line %q", status)
	}
	out := wireResponse{lines: map[string]string{}}
	out.status, _ = strconv.Atoi(f[1])
	for {
		line, err := r.ReadLine()
		if err != nil {
			e.t.Fatal(err)
		}
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		out.lines[name] = strings.TrimSpace(value)
	}
	if n, err := strconv.Atoi(out.lines["Content-Length"]); err == nil {
		out.body = make([]byte, n)
		if _, err := io.ReadFull(r.R, out.body); err != nil {
			e.t.Fatal(err)
		}
	} else if out.body, err = io.ReadAll(r.R); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestHeaderSpellingOnTheWire: over HTTP/1.1 every response header the
// service spells in lower case is sent that way, and a client that looks up
// x-ms-continuation case-sensitively reads every page of a query and of a
// feed.
func TestHeaderSpellingOnTheWire(t *testing.T) {
	e := start(t)
	db := e.database("db")
	c := e.container(db, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	const n = 7
	for i := range n {
		if _, err := c.CreateItem(t.Context(), azcosmos.NewPartitionKeyString("a"), fmt.Appendf(nil, `{"id":"%d","pk":"a"}`, i), nil); err != nil {
			t.Fatal(err)
		}
	}

	r := e.doWire("GET", "/dbs/db/colls/c/docs/3", nil, map[string]string{"x-ms-documentdb-partitionkey": `["a"]`})
	if r.status != 200 {
		t.Fatalf("read: %d %s", r.status, r.body)
	}
	for _, name := range []string{"etag", "lsn", "x-ms-request-charge", "x-ms-session-token", "x-ms-activity-id", "x-ms-content-path", "Content-Type", "Date"} {
		if _, ok := r.lines[name]; !ok {
			t.Errorf("read: no %q header line; sent %v", name, keys(r.lines))
		}
	}
	for name := range r.lines {
		if strings.HasPrefix(name, "X-Ms-") || name == "Etag" || name == "Lsn" {
			t.Errorf("read: header %q spelled in Go's canonical form", name)
		}
	}

	for _, tc := range []struct {
		name, method, path string
		body               []byte
		headers            map[string]string
	}{
		{"query", "POST", "/dbs/db/colls/c/docs", []byte(`{"query":"SELECT * FROM c"}`), map[string]string{
			"Content-Type": "application/query+json", "x-ms-documentdb-isquery": "true",
			"x-ms-documentdb-partitionkey": `["a"]`, "x-ms-max-item-count": "2"}},
		{"feed", "GET", "/dbs/db/colls/c/docs", nil, map[string]string{"x-ms-max-item-count": "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := 0
			headers := tc.headers
			for page := 0; ; page++ {
				if page > n {
					t.Fatalf("more than %d pages", n)
				}
				r := e.doWire(tc.method, tc.path, tc.body, headers)
				if r.status != 200 {
					t.Fatalf("page %d: %d %s", page, r.status, r.body)
				}
				var got struct{ Documents []json.RawMessage }
				if err := json.Unmarshal(r.body, &got); err != nil {
					t.Fatal(err)
				}
				seen += len(got.Documents)
				cont, ok := r.lines["x-ms-continuation"]
				if !ok {
					break
				}
				headers = map[string]string{"x-ms-continuation": cont}
				for k, v := range tc.headers {
					headers[k] = v
				}
			}
			if seen != n {
				t.Errorf("read %d items over the pages, want %d", seen, n)
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
