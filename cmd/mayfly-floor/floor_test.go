package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/auth"
)

// TestSDK sends the floor every request cmd/mayfly-load makes, through the
// Go SDK, and checks that the SDK accepts each answer.
func TestSDK(t *testing.T) {
	verify, err := newVerifier(auth.Config{Keys: []string{emulatorKey}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(&floor{verify: verify, certPEM: []byte("pem")})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cred, err := azcosmos.NewKeyCredential(emulatorKey)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	client, err := azcosmos.NewClientWithKey(srv.URL+"/", cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: hc}})
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
