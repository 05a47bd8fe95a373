package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/server"
)

// TestSDK sends the floor every request cmd/mayfly-load makes, through the
// Go SDK, and checks that the SDK accepts each answer.
func TestSDK(t *testing.T) {
	srv := startFloor(t, &floor{certPEM: []byte("pem")})
	hc := sdkTransport()
	db, c := sdkContainer(t, srv.URL+"/")
	ctx := context.Background()
	if _, err := c.Read(ctx, nil); err != nil {
		t.Fatal(err)
	}
	pk := azcosmos.NewPartitionKeyString("p")
	item := []byte(`{"id":"a","pk":"p"}`)
	if resp, err := c.CreateItem(ctx, pk, item, nil); err != nil || resp.RawResponse.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v", err)
	}
	if resp, err := c.UpsertItem(ctx, pk, item, nil); err != nil || resp.RawResponse.StatusCode != http.StatusOK {
		t.Fatalf("upsert: %v", err)
	}
	read, err := c.ReadItem(ctx, pk, "a", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ ID, PK string }
	if err := json.Unmarshal(read.Value, &got); err != nil || got.ID != "a" || got.PK != "p" {
		t.Fatalf("read: %s (%v)", read.Value, err)
	}
	pager := c.NewQueryItemsPager("SELECT * FROM c WHERE c.id = @id", pk,
		&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: "a"}}})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Items)
	}
	if n != 1 {
		t.Errorf("query returned %d items, want 1", n)
	}
	// The partition key ranges feed ends in a 304, as the SDK's cache
	// requires.
	ranges, err := c.ReadFeedRanges(ctx, nil)
	if err != nil || len(ranges) != 1 {
		t.Errorf("feed ranges %v, %v", ranges, err)
	}
	if _, err := db.Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}

	bad, _ := azcosmos.NewKeyCredential("AAAA" + emulatorKey[4:])
	other, _ := azcosmos.NewClientWithKey(srv.URL+"/", bad, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: hc}})
	_, err = other.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil)
	if !isStatus(err, http.StatusUnauthorized) {
		t.Errorf("wrong key: %v, want 401", err)
	}
}

func isStatus(err error, status int) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == status
}

// TestRepliesAsMayflys sends the same item operations and query to the
// floor and to an in-process Mayfly through the Go SDK, and checks that the
// floor answers with the same headers and bodies of the same length: the
// client must parse as much from the floor as from Mayfly.
func TestRepliesAsMayflys(t *testing.T) {
	mayfly, err := server.New(server.Config{Addr: "127.0.0.1:0", InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := mayfly.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mayfly.Close(context.Background()) })
	const docSize = 256
	fl := startFloor(t, &floor{certPEM: []byte("pem"), payload: payloadOf(docSize)})

	type reply struct {
		header http.Header
		body   []byte
	}
	ctx := context.Background()
	run := func(endpoint string) map[string]reply {
		_, c := sdkContainer(t, endpoint)
		pk := azcosmos.NewPartitionKeyString("pk-1")
		doc := []byte(`{"id":"item-1","pk":"pk-1","n":1,"payload":"` + payloadOf(docSize) + `"}`)
		out := map[string]reply{}
		keep := func(name string, resp azcosmos.ItemResponse, err error) {
			if err != nil {
				t.Fatalf("%s %s: %v", endpoint, name, err)
			}
			out[name] = reply{resp.RawResponse.Header, resp.Value}
		}
		resp, err := c.CreateItem(ctx, pk, doc, nil)
		keep("create", resp, err)
		resp, err = c.UpsertItem(ctx, pk, doc, nil)
		keep("upsert", resp, err)
		resp, err = c.ReadItem(ctx, pk, "item-1", nil)
		keep("read", resp, err)
		pager := c.NewQueryItemsPager("SELECT * FROM c WHERE c.id = @id", pk,
			&azcosmos.QueryOptions{QueryParameters: []azcosmos.QueryParameter{{Name: "@id", Value: "item-1"}}})
		page, err := pager.NextPage(ctx)
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("%s query: %d items, %v", endpoint, len(page.Items), err)
		}
		out["query"] = reply{page.RawResponse.Header, page.Items[0]}
		return out
	}
	want, got := run(mayfly.URL()), run(fl.URL+"/")
	for _, op := range []string{"create", "upsert", "read", "query"} {
		w, g := want[op], got[op]
		if wn, gn := headerNames(w.header), headerNames(g.header); wn != gn {
			t.Errorf("%s: the floor's headers are\n  %s\nMayfly's\n  %s", op, gn, wn)
		}
		for k := range w.header {
			if d := len(g.header.Get(k)) - len(w.header.Get(k)); k != "Date" && (d < -8 || d > 8) {
				t.Errorf("%s: the floor's %s is %q, Mayfly's %q", op, k, g.header.Get(k), w.header.Get(k))
			}
		}
		if d := len(g.body) - len(w.body); d < -8 || d > 8 {
			t.Errorf("%s: the floor's item is %d bytes, Mayfly's %d:\n  %s\n  %s", op, len(g.body), len(w.body), g.body, w.body)
		}
	}
}

// startFloor serves f, checking the emulator key's signatures, over
// HTTP/2 with TLS until the test ends.
func startFloor(t *testing.T, f *floor) *httptest.Server {
	t.Helper()
	verify, err := newVerifier(auth.Config{Keys: []string{emulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	f.verify = verify
	srv := httptest.NewUnstartedServer(f)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func sdkTransport() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
}

// sdkContainer creates database "db" and in it container "c", partitioned
// on /pk, at endpoint through the Go SDK.
func sdkContainer(t *testing.T, endpoint string) (*azcosmos.DatabaseClient, *azcosmos.ContainerClient) {
	t.Helper()
	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	client, err := azcosmos.NewClientWithKey(endpoint, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: sdkTransport()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase("db")
	props := azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}
	if _, err := db.CreateContainer(ctx, props, nil); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer("c")
	return db, c
}

// headerNames lists the names of h, sorted, but for the ones a server or
// transport adds on its own.
func headerNames(h http.Header) string {
	var names []string
	for k := range h {
		switch k {
		case "Date", "Content-Length":
			continue
		}
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}
