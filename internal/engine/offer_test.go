package engine

import (
	"context"
	"fmt"
	"strings"
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
		{Throughput{Autoscale: true, AutoscaleMax: 1000}, true},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, true},
		{Throughput{Autoscale: true, AutoscaleMax: 4500}, false},
		{Throughput{Autoscale: true, AutoscaleMax: 2000000}, false},
		{Throughput{Autoscale: true, AutoscaleMax: 0}, false},
		{Throughput{Autoscale: true, AutoscaleMax: -1000}, false},
	} {
		tp := tc.tp
		_, err := be.e.CreateContainer(ctx, "db", batchJSON(t, fmt.Sprintf(`{"id":"t%d","partitionKey":{"paths":["/pk"]}}`, i)), &tp)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%+v: %v", tc.tp, err)
		case !tc.ok && ErrorCode(err) != BadRequest:
			t.Errorf("%+v: %v, want a 400", tc.tp, err)
		case !tc.ok && tc.tp.Autoscale && !strings.Contains(err.Error(), "between 1000 and 1000000"):
			t.Errorf("%+v: %v, want the autoscale range in the message", tc.tp, err)
		}
	}
	for _, tc := range []struct {
		coll, content string
		ok            bool
	}{
		{"t0", `{"offerThroughput":500}`, true},
		{"t0", `{"offerThroughput":550}`, false},
		{"t0", `{"offerThroughput":500.5}`, false},
		{"t6", `{"offerAutopilotSettings":{"maxThroughput":4000}}`, true},
		{"t6", `{"offerAutopilotSettings":{"maxThroughput":"4000"}}`, false},
		{"t6", `{"offerAutopilotSettings":{"maxThroughput":4000.5}}`, false},
	} {
		body := batchJSON(t, `{"content":`+tc.content+`}`)
		_, err := be.e.ReplaceOffer(ctx, offerOf(t, be.e, tc.coll), body, "", KeepKind)
		if tc.ok != (err == nil) {
			t.Errorf("replace with %s: %v", tc.content, err)
		}
	}
}

// offerOf returns the rid of container coll's offer in database db.
func offerOf(t *testing.T, e *Engine, coll string) string {
	t.Helper()
	ctx := context.Background()
	res, _, err := e.ReadContainer(ctx, "db", coll)
	if err != nil {
		t.Fatal(err)
	}
	offers, err := e.ListOffers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offers {
		if o.Get("offerResourceId").Str() == res.Rid {
			return o.Get("id").Str()
		}
	}
	t.Fatalf("no offer for %s", coll)
	return ""
}

// An offer keeps its kind, manual or autoscale, unless the replace asks
// to migrate it, with the service's messages; a migration chooses the new
// throughput itself, as the service's autoscale FAQ describes.
func TestOfferMigration(t *testing.T) {
	be := newBatchEnv(t, "null")
	ctx := context.Background()
	manual := func(n int) string { return fmt.Sprintf(`{"content":{"offerThroughput":%d}}`, n) }
	auto := func(n int) string {
		return fmt.Sprintf(`{"content":{"offerAutopilotSettings":{"maxThroughput":%d}}}`, n)
	}
	for i, tc := range []struct {
		from    Throughput
		body    string
		migrate OfferMigration
		want    string // the content after, or the error's start
	}{
		{Throughput{Manual: 400}, auto(4000), KeepKind, "x-ms-cosmos-migrate-offer-to-autopilot must be supplied"},
		{Throughput{Manual: 400}, auto(4000), ToAutoscale, "x-ms-cosmos-migrate-offer-to-autopilot must be supplied"},
		{Throughput{Manual: 400}, manual(400), ToManual, "The offer"},
		{Throughput{Manual: 400}, manual(400), ToAutoscale, `{"offerThroughput":100,"offerAutopilotSettings":{"maxThroughput":1000}}`},
		{Throughput{Manual: 12300}, manual(400), ToAutoscale, `{"offerThroughput":1200,"offerAutopilotSettings":{"maxThroughput":12000}}`},
		{Throughput{Manual: 12500}, `{"content":{}}`, ToAutoscale, `{"offerThroughput":1300,"offerAutopilotSettings":{"maxThroughput":13000}}`},
		{Throughput{Manual: 400}, manual(600), KeepKind, `{"offerThroughput":600,"offerIsRUPerMinuteThroughputEnabled":false}`},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, manual(400), KeepKind, "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied"},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, manual(400), ToManual, "x-ms-cosmos-migrate-offer-to-manual-throughput must be supplied"},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, auto(4000), ToAutoscale, "The offer"},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, auto(1000), ToManual, `{"offerThroughput":4000,"offerIsRUPerMinuteThroughputEnabled":false}`},
		{Throughput{Autoscale: true, AutoscaleMax: 4000}, auto(5000), KeepKind, `{"offerThroughput":500,"offerAutopilotSettings":{"maxThroughput":5000}}`},
	} {
		tp := tc.from
		coll := fmt.Sprintf("m%d", i)
		if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"`+coll+`","partitionKey":{"paths":["/pk"]}}`), &tp); err != nil {
			t.Fatal(err)
		}
		rid := offerOf(t, be.e, coll)
		res, err := be.e.ReplaceOffer(ctx, rid, batchJSON(t, tc.body), "", tc.migrate)
		var got string
		if err != nil {
			if ErrorCode(err) != BadRequest {
				t.Errorf("%d: %v, want a 400", i, err)
			}
			got = err.Error()
		} else {
			got = string(res.Body.Get("content").JSON())
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("%d: %+v, %s, migrate %d: %s, want %s", i, tc.from, tc.body, tc.migrate, got, tc.want)
		}
		if err != nil {
			after, rerr := be.e.ReadOffer(ctx, rid)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if n := max(tc.from.Manual, tc.from.AutoscaleMax); !strings.Contains(string(after.Body.Get("content").JSON()), fmt.Sprint(n)) {
				t.Errorf("%d: the refused replace changed the offer: %s", i, after.Body.Get("content").JSON())
			}
		}
	}
}

// TestParseAutoscale: autoscale settings as the create header and an
// offer's content carry them; an incrementPercent that is not a
// percentage is refused rather than dropped.
func TestParseAutoscale(t *testing.T) {
	for _, tc := range []struct {
		settings string
		want     Throughput
		err      string
	}{
		{`{"maxThroughput":4000}`, Throughput{Autoscale: true, AutoscaleMax: 4000}, ""},
		{`{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":10}}}`,
			Throughput{Autoscale: true, AutoscaleMax: 4000, AutoscaleIncrementPercent: 10}, ""},
		{`{"maxThroughput":0}`, Throughput{Autoscale: true}, ""}, // the range is validateThroughput's
		{`{"maxThroughput":"4000"}`, Throughput{}, "between 1000 and 1000000"},
		{`{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":-5}}}`, Throughput{}, "incrementPercent"},
		{`{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":"x"}}}`, Throughput{}, "incrementPercent"},
		{`{"maxThroughput":4000,"autoUpgradePolicy":{"throughputPolicy":{"incrementPercent":2.5}}}`, Throughput{}, "incrementPercent"},
	} {
		got, err := ParseAutoscale(batchJSON(t, tc.settings))
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %+v, %v; want %+v", tc.settings, got, err, tc.want)
		case tc.err != "" && (ErrorCode(err) != BadRequest || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v; want a 400 saying %q", tc.settings, err, tc.err)
		}
	}
}
