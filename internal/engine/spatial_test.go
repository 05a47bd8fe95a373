package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/clock"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage/teststore"
)

// A container's geospatialConfig decides its space: in one of geometry
// the spatial functions work in the plane of the coordinates, in their
// units; in one of geography (the default) on the Earth, in metres.
func TestGeospatialConfigDecidesTheSpace(t *testing.T) {
	for _, tc := range []struct {
		config string
		want   string
	}{
		{`"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/loc/*","types":["Point"],"boundingBox":{"xmin":0,"ymin":0,"xmax":1000,"ymax":1000}}]}`,
			`[true,583.09518948453,true,5]`},
		{`"geospatialConfig":{"type":"Geography"}`, `[false,null,null,554058.9238]`},
	} {
		clk := clock.NewManual(batchT0)
		e, err := New(Config{Store: teststore.Open(t), Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		createDBAndContainer(t, e, `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},`+tc.config+`}`)
		be := &batchEnv{e: e, clock: clk}
		be.seed(t, `{"id":"door","pk":"p","loc":{"type":"Point","coordinates":[500,300]}}`)
		q := QueryParams{ItemRef: batchRef(`["p"]`), Query: `SELECT VALUE [ST_ISVALID(c.loc), ST_DISTANCE(c.loc, {"type":"Point","coordinates":[0,0]}) ?? null,
			ST_WITHIN(c.loc, {"type":"Polygon","coordinates":[[[400,200],[600,200],[600,400],[400,400],[400,200]]]}) ?? null,
			ROUND(ST_DISTANCE({"type":"Point","coordinates":[3,4]}, {"type":"Point","coordinates":[0,0]}) * 10000) / 10000] FROM c`}
		rows := drainRows(t, e, q, nil)
		if len(rows) != 1 || rows[0] != tc.want {
			t.Errorf("%s: %v, want %s", tc.config, rows, tc.want)
		}
		// A patch condition judges in the container's space too.
		planar := strings.Contains(tc.config, "Geometry")
		_, err = e.PatchItem(context.Background(), PatchItemParams{ItemRef: batchRef(`["p"]`), ID: "door",
			Condition: `FROM c WHERE ST_DISTANCE(c.loc, {"type":"Point","coordinates":[500,303]}) = 3`,
			Ops:       []PatchOp{{Op: "set", Path: []string{"seen"}, Value: document.BoolValue(true)}}})
		if held := err == nil; held != planar || err != nil && ErrorCode(err) != PreconditionFailed {
			t.Errorf("%s: a patch condition on a distance of 3: %v, want it to hold: %v", tc.config, err, planar)
		}
	}
}
