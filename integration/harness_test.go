// Package integration drives the official Go SDK (azcosmos) and raw HTTPS
// requests against an in-process Mayfly on a real listener.
package integration

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/server"
)

const emulatorKey = server.EmulatorKey

type env struct {
	t   *testing.T
	srv *server.Server
	url string
	// metricsURL is the server's metrics endpoint, on a listener of its own.
	metricsURL string
	client     *azcosmos.Client
	http       *http.Client
	clock      *clock.Manual
}

type envOption func(*server.Config)

// withManualClock runs the server on a clock the test moves by hand.
func withManualClock(c *clock.Manual) envOption {
	return func(cfg *server.Config) { cfg.Clock = c }
}

// start runs an in-memory server on a free loopback port and returns an SDK
// client for it. Everything is torn down when the test ends.
func start(t *testing.T, opts ...envOption) *env {
	t.Helper()
	cfg := server.Config{Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", InMemory: true}
	for _, o := range opts {
		o(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close server: %v", err)
		}
	})
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azcosmos.NewClientWithKey(srv.URL(), cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: hc,
		Retry:     policy.RetryOptions{MaxRetries: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The SDK shares its caches (partition key ranges by container rid,
	// container properties) among the clients of an endpoint while one
	// of them lives; a later test's server may get this one's port, and
	// its containers the same rids.
	t.Cleanup(client.Close)
	e := &env{t: t, srv: srv, url: srv.URL(), metricsURL: srv.MetricsURL(), client: client, http: hc}
	if c, ok := cfg.Clock.(*clock.Manual); ok {
		e.clock = c
	}
	return e
}

func (e *env) database(id string) *azcosmos.DatabaseClient {
	e.t.Helper()
	if _, err := e.client.CreateDatabase(context.Background(), azcosmos.DatabaseProperties{ID: id}, nil); err != nil {
		e.t.Fatalf("create database %s: %v", id, err)
	}
	db, err := e.client.NewDatabase(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return db
}

func (e *env) container(db *azcosmos.DatabaseClient, props azcosmos.ContainerProperties) *azcosmos.ContainerClient {
	e.t.Helper()
	if _, err := db.CreateContainer(context.Background(), props, nil); err != nil {
		e.t.Fatalf("create container %s: %v", props.ID, err)
	}
	c, err := db.NewContainer(props.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// containerJSON creates container id of db from its JSON properties with a
// raw request, for properties the Go SDK does not model (changeFeedPolicy),
// and returns its client.
func (e *env) containerJSON(db *azcosmos.DatabaseClient, id, props string) *azcosmos.ContainerClient {
	e.t.Helper()
	body := `{"id":"` + id + `",` + props + `}`
	expectStatus(e.t, e.do("POST", "/dbs/"+db.ID()+"/colls", []byte(body), nil), http.StatusCreated, "create container "+id)
	c, err := db.NewContainer(id)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// rawResponse is a response read whole.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// do sends a raw request, signed with the emulator key unless the caller
// sets Authorization itself.
// expectStatus fails the test unless r has status want, and returns r.
func expectStatus(t testing.TB, r rawResponse, want int, what string) rawResponse {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: %d %s, want %d", what, r.status, r.body, want)
	}
	return r
}

// expectJSON fails the test unless r has status, and returns r's body as a
// JSON object (nil for an empty body).
func expectJSON(t testing.TB, r rawResponse, status int, what string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, r.status, status, r.body)
	}
	var m map[string]any
	if len(r.body) > 0 {
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatalf("%s: body %s: %v", what, r.body, err)
		}
	}
	return m
}

func (e *env) do(method, path string, body []byte, headers map[string]string) rawResponse {
	e.t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(e.url, "/")+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	date := time.Now().UTC().Format(http.TimeFormat)
	req.Header.Set("x-ms-date", date)
	req.Header.Set("x-ms-version", "2020-11-05")
	typ, link := resourceOf(req.URL.EscapedPath())
	req.Header.Set("Authorization", signature(method, typ, link, date, emulatorKey))
	for k, v := range headers {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

// resourceOf derives the signed resource type and link of a path, as the
// SDKs do.
func resourceOf(escaped string) (string, string) {
	var segs []string
	for _, s := range strings.Split(strings.Trim(escaped, "/"), "/") {
		if s == "" {
			continue
		}
		u, _ := url.PathUnescape(s)
		segs = append(segs, u)
	}
	n := len(segs)
	switch {
	case n == 0:
		return "", ""
	case n%2 == 0:
		return segs[n-2], strings.Join(segs, "/")
	default:
		return segs[n-1], strings.Join(segs[:n-1], "/")
	}
}

// signature computes a master-key Authorization header independently of
// the server's code, from the protocol's description.
func signature(verb, typ, link, date, key string) string {
	k, _ := base64.StdEncoding.DecodeString(key)
	m := hmac.New(sha256.New, k)
	m.Write([]byte(strings.ToLower(verb) + "\n" + strings.ToLower(typ) + "\n" + link + "\n" + strings.ToLower(date) + "\n\n"))
	sig := base64.StdEncoding.EncodeToString(m.Sum(nil))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}
