package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestReplaceKeepsPartitionKey: a replace may not change the partition
// key's paths, kind or version (items are stored under hashes of the
// definition they were written with), and one that omits the definition
// keeps it. Defaults count as what they stand for: a Hash key without a
// version is version 1.
func TestReplaceKeepsPartitionKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, created, replaced string
		ok                      bool
	}{
		{"same", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk"],"kind":"Hash","version":2}`, true},
		{"version 2 to 1", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk"],"kind":"Hash","version":1}`, false},
		{"version 2 to none", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk"],"kind":"Hash"}`, false},
		{"version none to 2", `{"paths":["/pk"]}`, `{"paths":["/pk"],"kind":"Hash","version":2}`, false},
		{"version none to 1", `{"paths":["/pk"]}`, `{"paths":["/pk"],"kind":"Hash","version":1}`, true},
		{"kind none to Hash", `{"paths":["/pk"]}`, `{"paths":["/pk"],"kind":"Hash"}`, true},
		{"Hash to MultiHash", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/pk"],"kind":"MultiHash","version":2}`, false},
		{"MultiHash without version", `{"paths":["/a","/b"],"kind":"MultiHash","version":2}`, `{"paths":["/a","/b"]}`, true},
		{"path", `{"paths":["/pk"],"kind":"Hash","version":2}`, `{"paths":["/other"],"kind":"Hash","version":2}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := newBatchEnvWith(t, `{"id":"c","partitionKey":`+tc.created+`}`)
			before, _, err := be.e.ReadContainer(ctx, "db", "c")
			if err != nil {
				t.Fatal(err)
			}
			_, err = be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","partitionKey":`+tc.replaced+`}`), "")
			switch {
			case tc.ok && err != nil:
				t.Fatalf("replace: %v", err)
			case !tc.ok && !isCode(err, BadRequest):
				t.Fatalf("replace: %v, want 400", err)
			}
			after, _, err := be.e.ReadContainer(ctx, "db", "c")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := after.Body.Get("partitionKey").String(), before.Body.Get("partitionKey").String(); got != want {
				t.Errorf("the definition reads back as %s, want %s", got, want)
			}
		})
	}
	be := newBatchEnv(t, "null")
	res, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, `{"id":"c","defaultTtl":60}`), "")
	if err != nil {
		t.Fatalf("a replace without the partition key: %v", err)
	}
	if got := res.Body.Get("partitionKey").String(); got != `{"paths":["/pk"],"kind":"Hash","version":2}` {
		t.Errorf("a replace without the partition key answers with %s, want the stored definition", got)
	}
}

// TestContainerDefinitionRefusals: definitions the service refuses get a
// 400 at create, where storing them would leave a composite unused, a
// key no item could hold, or limits unkept; the ones beside them are
// accepted.
func TestContainerDefinitionRefusals(t *testing.T) {
	ctx := context.Background()
	be := newBatchEnv(t, "null")
	paths := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `"/p%d"`, i)
		}
		return b.String()
	}
	keys := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"paths":["/u%d"]}`, i)
		}
		return b.String()
	}
	for i, tc := range []struct {
		props string
		ok    bool
	}{
		{`"partitionKey":{"paths":["/pk/*"]}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":{"retentionInMinutes":10}}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":"10"}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":-5}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":1.5}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":true}`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":"10"`, false},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":10}`, true},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{"retentionDuration":0}`, true},
		{`"partitionKey":{"paths":["/pk"]},"changeFeedPolicy":{}`, true},
		{`"partitionKey":{"paths":["/pk/[]"]}`, false},
		{`"partitionKey":{"paths":["/a","/a"],"kind":"MultiHash"}`, false},
		{`"partitionKey":{"paths":["/a","/a/b"],"kind":"MultiHash"}`, false},
		{`"partitionKey":{"paths":["/a","/ab"],"kind":"MultiHash"}`, true},
		{`"partitionKey":{"paths":["/a/b"]}`, true},
		{`"indexingPolicy":{"compositeIndexes":[[{"path":"/a"}]]}`, false},
		{`"indexingPolicy":{"compositeIndexes":[[{"path":"/a","order":"up"},{"path":"/b"}]]}`, false},
		{`"indexingPolicy":{"compositeIndexes":[[{"path":"/a/*"},{"path":"/b"}]]}`, false},
		{`"indexingPolicy":{"compositeIndexes":[[{"path":"/a/[]/c"},{"path":"/b"}]]}`, false},
		{`"indexingPolicy":{"compositeIndexes":[{"path":"/a"},{"path":"/b"}]}`, false},
		{`"indexingPolicy":{"compositeIndexes":{"path":"/a"}}`, false},
		{`"indexingPolicy":{"compositeIndexes":[[{"path":"/a","order":"Ascending"},{"path":"/b","order":"descending"}],[{"path":"/a"},{"path":"/c"}]]}`, true},
		{`"indexingPolicy":{"compositeIndexes":[]}`, true},
		{`"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Frob"]}]}`, false},
		{`"indexingPolicy":{"spatialIndexes":[{"types":["Point"]}]}`, false},
		{`"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Point","Polygon","LineString","MultiPolygon"]}]}`, true},
		{`"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Point"],"boundingBox":{"xmin":0,"ymin":0,"xmax":1000,"ymax":1000}}]}`, true},
		{`"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Point"]}]}`, false},
		{`"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Point"],"boundingBox":{"xmin":10,"ymin":0,"xmax":5,"ymax":1000}}]}`, false},
		{`"geospatialConfig":{"type":"Geometry"},"indexingPolicy":{"spatialIndexes":[{"path":"/g/*","types":["Point"],"boundingBox":{"xmin":0,"ymin":0,"xmax":"1"}}]}`, false},
		{`"geospatialConfig":{"type":"Geography"}`, true},
		{`"geospatialConfig":{"type":"Bogus"}`, false},
		{`"geospatialConfig":"Geometry"`, false},
		{`"uniqueKeyPolicy":{"uniqueKeys":[{"paths":[` + paths(17) + `]}]}`, false},
		{`"uniqueKeyPolicy":{"uniqueKeys":[{"paths":[` + paths(16) + `]}]}`, true},
		{`"uniqueKeyPolicy":{"uniqueKeys":[` + keys(11) + `]}`, false},
		{`"uniqueKeyPolicy":{"uniqueKeys":[` + keys(10) + `]}`, true},
		{`"fullTextPolicy":{"defaultLanguage":"en-US","fullTextPaths":[{"path":"/t","language":"en-US"}]},"indexingPolicy":{"fullTextIndexes":[{"path":"/t"}]}`, true},
		{`"fullTextPolicy":{"fullTextPaths":[{"path":"t"}]}`, false},
		{`"fullTextPolicy":{"fullTextPaths":[{"path":"/t"},{"path":"/t"}]}`, false},
		{`"fullTextPolicy":{"fullTextPaths":[{"path":"/t/*"}]}`, false},
		{`"fullTextPolicy":"yes"`, false},
		{`"indexingPolicy":{"fullTextIndexes":[{"nopath":1}]}`, false},
	} {
		body := fmt.Sprintf(`{"id":"d%d",%s}`, i, tc.props)
		if !strings.Contains(tc.props, "partitionKey") {
			body = fmt.Sprintf(`{"id":"d%d","partitionKey":{"paths":["/pk"]},%s}`, i, tc.props)
		}
		_, err := be.e.CreateContainer(ctx, "db", batchJSON(t, body), nil)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.props, err)
		case !tc.ok && !isCode(err, BadRequest):
			t.Errorf("%s: %v, want 400", tc.props, err)
		}
	}
}

// A replace may not change a container's unique keys, nor leave them out:
// the service answers either with its 403, and the keys stay.
func TestReplaceKeepsUniqueKeys(t *testing.T) {
	ctx := context.Background()
	const def = `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/u"]}]}`
	be := newBatchEnvWith(t, def+`}`)
	for _, body := range []string{
		`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"uniqueKeyPolicy":{"uniqueKeys":[{"paths":["/v"]}]}}`,
		`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60}`,
	} {
		_, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, body), "")
		if !isCode(err, Forbidden) || !strings.Contains(err.Error(), "unique index cannot be modified") {
			t.Errorf("replace with %s: %v, want the service's 403", body, err)
		}
	}
	if _, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, def+`,"defaultTtl":60}`), ""); err != nil {
		t.Errorf("a replace that keeps the unique keys: %v", err)
	}
}
