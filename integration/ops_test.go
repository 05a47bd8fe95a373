package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// A load balancer asks /_health/live and /_health/ready on the API port,
// without a key; /metrics counts requests by operation and status.
func TestHealthAndRequestMetrics(t *testing.T) {
	e := start(t)
	for _, path := range []string{"_health/live", "_health/ready"} {
		resp, err := e.http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET /%s: %d, want 200", path, resp.StatusCode)
		}
	}
	c := e.container(e.database("db"), azcosmos.ContainerProperties{ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	pk := azcosmos.NewPartitionKeyString("p")
	if _, err := c.CreateItem(context.Background(), pk, []byte(`{"id":"a","pk":"p"}`), nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := c.ReadItem(context.Background(), pk, "a", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ReadItem(context.Background(), pk, "missing", nil); err == nil {
		t.Fatal("read a missing item")
	}
	m := e.metrics(t)
	for key, want := range map[string]float64{
		`mayfly_request_duration_seconds_count{operation="GET docs",status="200"}`:  3,
		`mayfly_request_duration_seconds_count{operation="GET docs",status="404"}`:  1,
		`mayfly_request_duration_seconds_count{operation="POST docs",status="201"}`: 1,
	} {
		if m[key] != want {
			var near []string
			for k := range m {
				if strings.HasPrefix(k, "mayfly_request_duration_seconds_count") {
					near = append(near, k)
				}
			}
			t.Errorf("%s = %v, want %v (have %v)", key, m[key], want, near)
		}
	}
	if _, ok := m["mayfly_requests_in_flight"]; !ok {
		t.Error("no mayfly_requests_in_flight")
	}
}
