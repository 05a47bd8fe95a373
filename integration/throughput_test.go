package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/server"
)

func withEnforcedThroughput(cfg *server.Config) { cfg.EnforceThroughput = true }

// TestThroughputEnforced: with --enforce-throughput, requests over a
// container's provisioned RU/s get 429 with substatus 3200 and a retry
// delay, other containers keep their own budgets, and the request passes
// once the delay has passed.
func TestThroughputEnforced(t *testing.T) {
	clk := clock.NewManual(time.Now())
	e := start(t, withManualClock(clk), withEnforcedThroughput)
	e.database("db")
	for _, id := range []string{"a", "b"} {
		if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"`+id+`","partitionKey":{"paths":["/pk"]}}`), map[string]string{"x-ms-offer-throughput": "400"}); r.status != 201 {
			t.Fatalf("create %s: %d %s", id, r.status, r.body)
		}
	}
	create := func(coll string, i int) rawResponse {
		return e.do("POST", "/dbs/db/colls/"+coll+"/docs", fmt.Appendf(nil, `{"id":"%d","pk":"p"}`, i),
			map[string]string{"x-ms-documentdb-partitionkey": `["p"]`})
	}
	var throttled rawResponse
	spent := 0.0
	for i := 0; i < 200; i++ {
		r := create("a", i)
		if r.status == 429 {
			throttled = r
			break
		}
		if r.status != 201 {
			t.Fatalf("create %d: %d %s", i, r.status, r.body)
		}
		charge, _ := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64)
		spent += charge
	}
	if throttled.status != 429 {
		t.Fatalf("no 429 after spending %.0f RU of a 400 RU/s container within one second", spent)
	}
	if spent < 400 || spent > 420 {
		t.Errorf("throttled after %.0f RU; want about 400", spent)
	}
	if got := throttled.header.Get("x-ms-substatus"); got != "3200" {
		t.Errorf("substatus %q, want 3200", got)
	}
	wait, err := strconv.Atoi(throttled.header.Get("x-ms-retry-after-ms"))
	if err != nil || wait <= 0 || wait > 1000 {
		t.Fatalf("x-ms-retry-after-ms %q", throttled.header.Get("x-ms-retry-after-ms"))
	}
	if r := create("b", 0); r.status != 201 {
		t.Errorf("another container's budget was spent too: %d %s", r.status, r.body)
	}
	clk.Advance(time.Duration(wait) * time.Millisecond)
	if r := create("a", 1000); r.status != 201 {
		t.Errorf("after the retry delay: %d %s", r.status, r.body)
	}
}

// TestThroughputEnforcedSDK: the Go SDK's retry policy rides out the 429s.
func TestThroughputEnforcedSDK(t *testing.T) {
	e := start(t, withEnforcedThroughput)
	cred, _ := azcosmos.NewKeyCredential(emulatorKey)
	client, err := azcosmos.NewClientWithKey(e.url, cred, &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if _, err := client.CreateDatabase(ctx, azcosmos.DatabaseProperties{ID: "db"}, nil); err != nil {
		t.Fatal(err)
	}
	db, _ := client.NewDatabase("db")
	tp := azcosmos.NewManualThroughputProperties(400)
	if _, err := db.CreateContainer(ctx, azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}},
		&azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	c, _ := db.NewContainer("c")
	for i := range 100 { // about 600 RU: at least one 429 on the way
		if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), fmt.Appendf(nil, `{"id":"%d","pk":"p"}`, i), nil); err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
}
