package engine

import (
	"context"
	"fmt"
	"testing"
)

// Provisioned throughput is checked as the service checks it: manual RU/s
// from 400 to 1,000,000 in steps of 100, an autoscale maximum from 1,000 to
// 1,000,000 in steps of 1,000, at create and at replace.
func TestThroughputValues(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	for i, tc := range []struct {
		tp Throughput
		ok bool
	}{
		{Throughput{Manual: 400}, true},
		{Throughput{Manual: 1000000}, true},
		{Throughput{Manual: 12300}, true},
		{Throughput{Manual: 300}, false},
		{Throughput{Manual: 450}, false},
		{Throughput{Manual: 1000100}, false},
		{Throughput{AutoscaleMax: 1000}, true},
		{Throughput{AutoscaleMax: 4000}, true},
		{Throughput{AutoscaleMax: 4500}, false},
		{Throughput{AutoscaleMax: 2000000}, false},
	} {
		tp := tc.tp
		_, err := be.e.CreateContainer(ctx, "db", batchJSON(t, fmt.Sprintf(`{"id":"t%d","partitionKey":{"paths":["/pk"]}}`, i)), &tp)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%+v: %v", tc.tp, err)
		case !tc.ok && ErrorCode(err) != BadRequest:
			t.Errorf("%+v: %v, want a 400", tc.tp, err)
		}
	}
	offers, err := be.e.ListOffers(ctx)
	if err != nil || len(offers) == 0 {
		t.Fatalf("offers: %v, %v", offers, err)
	}
	rid := offers[0].Get("id").Str()
	for _, tc := range []struct {
		content string
		ok      bool
	}{
		{`{"offerThroughput":500}`, true},
		{`{"offerThroughput":550}`, false},
		{`{"offerThroughput":500.5}`, false},
		{`{"offerAutopilotSettings":{"maxThroughput":4000}}`, true},
		{`{"offerAutopilotSettings":{"maxThroughput":"4000"}}`, false},
		{`{"offerAutopilotSettings":{"maxThroughput":4000.5}}`, false},
	} {
		body := batchJSON(t, `{"content":`+tc.content+`}`)
		_, err := be.e.ReplaceOffer(ctx, rid, body, "")
		if tc.ok != (err == nil) {
			t.Errorf("replace with %s: %v", tc.content, err)
		}
	}
}
