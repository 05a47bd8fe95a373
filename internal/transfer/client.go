// Package transfer moves data in and out of a running Mayfly (or any
// server speaking the Cosmos DB NoSQL REST API) over its API: export of a
// database or container as JSON lines, import of such lines, and the
// request signed with the account key that asks a server for a backup.
package transfer

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/clock"
)

// ClientOptions says which server to talk to and how to trust it.
type ClientOptions struct {
	Endpoint string // e.g. https://localhost:8081/
	Key      string // the account key (base64)
	CAFile   string // a PEM file to trust; empty: the system's roots
	Insecure bool   // skip certificate verification
	Clock    clock.Clock
}

// Client sends requests signed with the account key.
type Client struct {
	endpoint string
	key      []byte
	http     *http.Client
	clock    clock.Clock
}

// NewClient returns a client for o.
func NewClient(o ClientOptions) (*Client, error) {
	key, err := auth.DecodeKey(o.Key)
	if err != nil {
		return nil, fmt.Errorf("the account key: %w", err)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no certificate", o.CAFile)
		}
		tlsConfig.RootCAs = pool
	}
	if _, err := url.Parse(o.Endpoint); err != nil {
		return nil, fmt.Errorf("the endpoint %q: %w", o.Endpoint, err)
	}
	clk := o.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	return &Client{endpoint: strings.TrimSuffix(o.Endpoint, "/"), key: key, clock: clk,
		http: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true}}}, nil
}

// Error is a response other than the one expected.
type Error struct {
	Status  int
	Message string
	// retryAfter is how long a 429 asked to wait.
	retryAfter time.Duration
}

func (e *Error) Error() string { return fmt.Sprintf("the server answered %d: %s", e.Status, e.Message) }

// do sends a request for the resource at path (names, unescaped segments
// joined by "/"), signed for it, with body as JSON when not nil, and
// returns the response when its status is one of ok.
//
// A reply of 429 (too many requests) is waited out as the service asks
// (x-ms-retry-after-ms) and the request sent again, as the SDKs do, for up
// to maxThrottled in all: a server that enforces throughput throttles a
// bulk import or export, and that is no failure.
func (c *Client) do(ctx context.Context, method, path string, header map[string]string, body any, ok ...int) (*http.Response, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	var waited time.Duration
	for {
		resp, err := c.send(ctx, method, path, header, b, body != nil, ok)
		var e *Error
		if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || waited >= maxThrottled {
			return resp, err
		}
		wait := min(max(e.retryAfter, 10*time.Millisecond), 5*time.Second)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		waited += wait
	}
}

// maxThrottled is the longest do waits out a server's 429s for one
// request.
const maxThrottled = time.Minute

// send sends one request, as do describes.
func (c *Client) send(ctx context.Context, method, path string, header map[string]string, b []byte, hasBody bool, ok []int) (*http.Response, error) {
	var rd io.Reader
	if hasBody {
		rd = bytes.NewReader(b)
	}
	segs := strings.Split(path, "/")
	escaped := make([]string, len(segs))
	for i, s := range segs {
		escaped[i] = url.PathEscape(s)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+"/"+strings.Join(escaped, "/"), rd)
	if err != nil {
		return nil, err
	}
	// The signature names the resource type and link: an odd number of
	// segments addresses a feed of the last one's type.
	var typ, link string
	if n := len(segs); n%2 == 0 {
		typ, link = segs[n-2], path
	} else {
		typ, link = segs[n-1], strings.Join(segs[:n-1], "/")
	}
	date := auth.FormatDate(c.clock.Now())
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-07-15")
	req.Header.Set("Authorization", auth.MasterHeader(method, typ, link, date, c.key))
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		var invalid *tls.CertificateVerificationError
		if errors.As(err, &unknown) || errors.As(err, &invalid) {
			return nil, fmt.Errorf("reach the server: %w (give --ca-file with the server's certificate, or --insecure to take any)", err)
		}
		return nil, fmt.Errorf("reach the server: %w", err)
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return resp, nil
		}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	e := errorOf(resp.StatusCode, msg)
	if ms, err := strconv.ParseFloat(resp.Header.Get("x-ms-retry-after-ms"), 64); err == nil && ms > 0 {
		e.retryAfter = time.Duration(ms * float64(time.Millisecond))
	}
	return nil, e
}

// errorOf is the Error of a reply with status and body msg.
func errorOf(status int, msg []byte) *Error {
	var e struct{ Message string }
	if json.Unmarshal(msg, &e) == nil && e.Message != "" {
		return &Error{Status: status, Message: firstLine(e.Message)}
	}
	return &Error{Status: status, Message: firstLine(string(msg))}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Backup asks the server to write a consistent copy of its data into the
// directory to, on the server's machine (POST /_mayfly/backup).
func (c *Client) Backup(ctx context.Context, to string) error {
	resp, err := c.do(ctx, http.MethodPost, "_mayfly/backup", nil, map[string]string{"to": to}, http.StatusOK)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
