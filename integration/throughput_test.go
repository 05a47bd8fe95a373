package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
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

// TestThroughputEnforcedScripts: a stored procedure's run spends its
// container's budget as the writes it makes would, and is throttled once
// the budget is spent.
func TestThroughputEnforcedScripts(t *testing.T) {
	clk := clock.NewManual(time.Now())
	e := start(t, withManualClock(clk), withEnforcedThroughput)
	e.database("db")
	if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"a","partitionKey":{"paths":["/pk"]}}`), map[string]string{"x-ms-offer-throughput": "400"}); r.status != 201 {
		t.Fatalf("create container: %d %s", r.status, r.body)
	}
	sproc, _ := json.Marshal(map[string]string{"id": "fill", "body": `function (n) { var c = getContext().getCollection();
		for (var i = 0; i < 10; i++) { c.upsertDocument(c.getSelfLink(), {id: "d" + n + "-" + i, pk: "p"}); } }`})
	if r := e.do("POST", "/dbs/db/colls/a/sprocs", sproc, nil); r.status != 201 {
		t.Fatalf("create sproc: %d %s", r.status, r.body)
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	spent := 0.0
	for i := 0; i < 100; i++ {
		r := e.do("POST", "/dbs/db/colls/a/sprocs/fill", fmt.Appendf(nil, `[%d]`, i), pk)
		if r.status == 429 {
			if spent < 400 {
				t.Errorf("a run was throttled after %.0f RU of a 400 RU/s container", spent)
			}
			if r := e.do("POST", "/dbs/db/colls/a/docs", []byte(`{"id":"x","pk":"p"}`), pk); r.status != 429 {
				t.Errorf("a create after the runs spent the budget: %d, want 429", r.status)
			}
			return
		}
		if r.status != 200 {
			t.Fatalf("run %d: %d %s", i, r.status, r.body)
		}
		charge, _ := strconv.ParseFloat(r.header.Get("x-ms-request-charge"), 64)
		spent += charge
	}
	t.Fatalf("100 runs spent %.0f RU of a 400 RU/s container within one second without a 429", spent)
}

// TestThroughputEnforcedBulk: a bulk request is throttled operation by
// operation, as the service throttles it: those within the container's
// throughput run, the rest are 429 (substatus 3200, with a retry delay)
// in a 207, and the client retries only those.
func TestThroughputEnforcedBulk(t *testing.T) {
	clk := clock.NewManual(time.Now())
	e := start(t, withManualClock(clk), withEnforcedThroughput)
	e.database("db")
	if r := e.do("POST", "/dbs/db/colls", []byte(`{"id":"c","partitionKey":{"paths":["/pk"]}}`), map[string]string{"x-ms-offer-throughput": "400"}); r.status != 201 {
		t.Fatalf("create container: %d %s", r.status, r.body)
	}
	bulk := map[string]string{"x-ms-cosmos-is-batch-request": "true", "x-ms-cosmos-batch-atomic": "false",
		"x-ms-cosmos-batch-continue-on-error": "true", "x-ms-documentdb-partitionkeyrangeid": "0"}
	body := func(ids []int) []byte {
		b := []byte{'['}
		for i, id := range ids {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"operationType":"Create","partitionKey":"[\"p\"]","resourceBody":{"id":"%d","pk":"p"}}`, id)
		}
		return append(b, ']')
	}
	type result struct {
		StatusCode    int     `json:"statusCode"`
		SubStatusCode int     `json:"subStatusCode"`
		RequestCharge float64 `json:"requestCharge"`
		RetryAfter    int     `json:"retryAfterMilliseconds"`
	}
	send := func(ids []int) []result {
		t.Helper()
		r := e.do("POST", "/dbs/db/colls/c/docs", body(ids), bulk)
		var out []result
		if err := json.Unmarshal(r.body, &out); err != nil || len(out) != len(ids) {
			t.Fatalf("bulk of %d: %d %s: %v", len(ids), r.status, r.body, err)
		}
		return out
	}
	ids := make([]int, 100)
	for i := range ids {
		ids[i] = i
	}
	out := send(ids)
	var created, throttled []int
	spent := 0.0
	for i, res := range out {
		switch res.StatusCode {
		case 201:
			created = append(created, ids[i])
			spent += res.RequestCharge
		case 429:
			throttled = append(throttled, ids[i])
			if res.SubStatusCode != 3200 || res.RetryAfter <= 0 || res.RetryAfter > 1000 {
				t.Errorf("operation %d: 429 with substatus %d, retry after %d ms", i, res.SubStatusCode, res.RetryAfter)
			}
		default:
			t.Fatalf("operation %d: status %d", i, res.StatusCode)
		}
	}
	if len(created) == 0 || len(throttled) == 0 || spent < 400 || spent > 420 {
		t.Fatalf("%d created (%.0f RU) and %d throttled; want about 400 RU of creates, the rest throttled", len(created), spent, len(throttled))
	}
	pk := map[string]string{"x-ms-documentdb-partitionkey": `["p"]`}
	clk.Advance(time.Second)
	if r := e.do("GET", fmt.Sprintf("/dbs/db/colls/c/docs/%d", throttled[0]), nil, pk); r.status != 404 {
		t.Errorf("a throttled create wrote: %d", r.status)
	}
	// Once the delay has passed, the throttled operations run.
	for len(throttled) > 0 {
		var again []int
		for i, res := range send(throttled) {
			if res.StatusCode == 429 {
				again = append(again, throttled[i])
			} else if res.StatusCode != 201 {
				t.Fatalf("retried create %d: status %d", throttled[i], res.StatusCode)
			}
		}
		if len(again) == len(throttled) {
			t.Fatalf("no progress after the delay: %d still throttled", len(again))
		}
		throttled = again
		clk.Advance(time.Second)
	}
	for _, id := range ids {
		if r := e.do("GET", fmt.Sprintf("/dbs/db/colls/c/docs/%d", id), nil, pk); r.status != 200 {
			t.Fatalf("item %d after the retries: %d", id, r.status)
		}
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
	t.Cleanup(client.Close) // as in start
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
