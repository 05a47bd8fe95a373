package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const vectorContainer = `{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},
	"vectorEmbeddingPolicy":{"vectorEmbeddings":[
		{"path":"/e","dataType":"float32","dimensions":3,"distanceFunction":"euclidean"},
		{"path":"/d","dataType":"float32","dimensions":3,"distanceFunction":"dotproduct"}]},
	"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/e/*"},{"path":"/d/*"}],
		"vectorIndexes":[{"path":"/e","type":"flat"},{"path":"/d","type":"diskANN"}]}}`

// ORDER BY VectorDistance orders most similar first by the distance
// function the container's embedding policy gives the path, in one
// partition and across all, and the plan the gateway gives the SDKs says
// the same direction.
func TestVectorDistanceFollowsThePolicy(t *testing.T) {
	be := newBatchEnvWith(t, vectorContainer)
	be.seed(t,
		`{"id":"a","pk":"x","e":[1,2,3],"d":[1,2,3]}`,
		`{"id":"b","pk":"y","e":[2,3,4],"d":[2,3,4]}`,
		`{"id":"c","pk":"x","e":[9,9,9],"d":[9,9,9]}`,
		`{"id":"d","pk":"y","e":[0,0,1],"d":[0,0,1]}`,
	)
	ctx := context.Background()
	ids := func(page *FeedPage) string {
		var out []string
		for _, it := range page.Items {
			out = append(out, strings.Trim(string(it), `"`))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ key, query, want string }{
		// Euclidean by the policy: nearest first.
		{"", "SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.e, [2,3,4])", "b a d"},
		{`["x"]`, "SELECT VALUE c.id FROM c ORDER BY VectorDistance(c.e, [2,3,4])", "a c"},
		// The dot product by the policy: highest first.
		{"", "SELECT TOP 3 VALUE c.id FROM c ORDER BY VectorDistance(c.d, [2,3,4])", "c b a"},
		// The options win over the policy.
		{"", "SELECT TOP 2 VALUE c.id FROM c ORDER BY VectorDistance(c.e, [2,3,4], false, {distanceFunction: 'dotproduct'})", "c b"},
		// A vector not read from a path of the policy is scored by cosine.
		{"", "SELECT TOP 1 VALUE c.id FROM c ORDER BY VectorDistance([0,0,5], [c.d[0], c.d[1], c.d[2]])", "d"},
	} {
		// Across partitions, as an SDK sends the query to the one range.
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(tc.key), Query: tc.query, MaxItemCount: -1, CrossPartition: true, RangeID: "0"})
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if got := ids(page); got != tc.want {
			t.Errorf("%s (key %s): %s, want %s", tc.query, tc.key, got, tc.want)
		}
	}

	for _, tc := range []struct{ query, dir string }{
		{"SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.e, [2,3,4])", `"orderBy":["Ascending"]`},
		{"SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.d, [2,3,4])", `"orderBy":["Descending"]`},
		{"SELECT TOP 3 c.id FROM c ORDER BY VectorDistance(c.e, [2,3,4], false, {distanceFunction: 'cosine'})", `"orderBy":["Descending"]`},
	} {
		plan, err := be.e.PlanFor(ctx, "db", "c", tc.query, nil, "")
		if err != nil {
			t.Fatalf("plan of %s: %v", tc.query, err)
		}
		if !strings.Contains(string(plan), tc.dir) || !strings.Contains(string(plan), `"hasNonStreamingOrderBy":true`) {
			t.Errorf("plan of %s: %s, want %s and a non-streaming ORDER BY", tc.query, plan, tc.dir)
		}
		// The plan a refusal to serve the query across partitions
		// carries, which DocumentDB-era SDKs read, says the same.
		_, err = be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(""), Query: tc.query, CrossPartition: true})
		var ee *Error
		if !errors.As(err, &ee) || ee.SubStatus != SubCrossPartitionNotServed || !strings.Contains(string(ee.Additional), tc.dir) {
			t.Errorf("refusal of %s: %v, want a plan with %s", tc.query, err, tc.dir)
		}
	}
	if _, err := be.e.PlanFor(ctx, "db", "gone", "SELECT TOP 1 * FROM c ORDER BY VectorDistance(c.e, [1])", nil, ""); !isCode(err, NotFound) {
		t.Errorf("plan of a vector query over a missing container: %v, want 404", err)
	}
}

// The embedding policy and the vector indexes are checked when a container
// is created and stay as created.
func TestVectorPolicies(t *testing.T) {
	be := newBatchEnvWith(t, vectorContainer)
	ctx := context.Background()
	for _, tc := range []struct{ body, want string }{
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float33","dimensions":3,"distanceFunction":"cosine"}]}`, "Vector Embedding Policy has an invalid DataType"},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":8000,"distanceFunction":"cosine"}]}`, "Vector Embedding Policy has Dimensions:8000 which is more than the maximum supported value"},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":-1,"distanceFunction":"cosine"}]}`, "The Vector Embedding Policy has Dimensions:-1"},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":"8","distanceFunction":"cosine"}]}`, `The Vector Embedding Policy has Dimensions:"8", which must be a positive integer`},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":3,"distanceFunction":"handMeasured"}]}`, "The Vector Embedding Policy has an invalid DistanceFunction:handMeasured"},
		{`"indexingPolicy":{"vectorIndexes":[{"path":"/vector1","type":"flat"}]}`, "The Vector Indexing Policy's path::/vector1 not matching in Embedding's path."},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":3,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"notFlat"}]}`, "Index Type::notFlat is invalid"},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":256,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"quantizedFlat","quantizationByteSize":0}]}`, "The Vector Indexing Policy parameter QuantizationByteSize value :: 0 is out of range. The allowed range is between 1 and 256."},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":256,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"diskANN","indexingSearchListSize":5}]}`, "IndexingSearchListSize value :: 5 is out of range. The allowed range is between 25 and 500."},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":256,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"diskANN","vectorIndexShardKey":["country"]}]}`, "The Vector Indexing Policy has an invalid Shard Path: country."},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":256,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"diskANN","vectorIndexShardKey":["/a","/b","/c"]}]}`, "The number of shard paths defined in the Vector Indexing Policy: 3 exceeds the maximum: 1."},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":256,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"diskANN","vectorIndexShardKey":"/a"}]}`, "One of the specified inputs is invalid"},
		{`"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"float32","dimensions":1536,"distanceFunction":"cosine"}]},"indexingPolicy":{"vectorIndexes":[{"path":"/v","type":"flat"}]}`, "flat index supports"},
	} {
		_, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"v","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},`+tc.body+`}`), nil)
		var ee *Error
		if !errors.As(err, &ee) || ee.Code != BadRequest || !strings.Contains(ee.Message, tc.want) {
			t.Errorf("%s: %v, want 400 with %q", tc.body, err, tc.want)
		}
	}
	for _, dt := range []string{"float32", "float16", "int8", "uint8"} {
		if _, err := be.e.CreateContainer(ctx, "db", batchJSON(t, `{"id":"`+dt+`","partitionKey":{"paths":["/pk"]},"vectorEmbeddingPolicy":{"vectorEmbeddings":[{"path":"/v","dataType":"`+dt+`","dimensions":8,"distanceFunction":"cosine"}]}}`), nil); err != nil {
			t.Errorf("dataType %s: %v", dt, err)
		}
	}

	res, _, err := be.e.ReadContainer(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	body := res.Body
	if got := body.Get("vectorEmbeddingPolicy").String(); got != `{"vectorEmbeddings":[{"path":"/e","dataType":"float32","dimensions":3,"distanceFunction":"euclidean"},{"path":"/d","dataType":"float32","dimensions":3,"distanceFunction":"dotproduct"}]}` {
		t.Errorf("the policy reads back as %s", got)
	}
	replace := func(b string) error {
		_, err := be.e.ReplaceContainer(ctx, "db", "c", batchJSON(t, b), "")
		return err
	}
	same := strings.Replace(vectorContainer, `"excludedPaths":[{"path":"/e/*"},{"path":"/d/*"}]`, `"excludedPaths":[{"path":"/e/*"},{"path":"/d/*"},{"path":"/big/*"}]`, 1)
	if err := replace(same); err != nil {
		t.Errorf("a replace with the same vector policies: %v", err)
	}
	if err := replace(strings.Replace(vectorContainer, `"dimensions":3,"distanceFunction":"euclidean"`, `"dimensions":4,"distanceFunction":"euclidean"`, 1)); !isCode(err, BadRequest) || !strings.Contains(err.Error(), "Paths in existing embedding policy cannot be modified in Collection Replace") {
		t.Errorf("a replace changing the embedding policy: %v", err)
	}
	if err := replace(strings.Replace(vectorContainer, `{"path":"/d","type":"diskANN"}`, `{"path":"/d","type":"flat"}`, 1)); !isCode(err, BadRequest) || !strings.Contains(err.Error(), "Paths in existing vector indexing policy cannot be modified in Collection Replace") {
		t.Errorf("a replace changing a vector index: %v", err)
	}
	if err := replace(strings.Replace(vectorContainer, `"vectorIndexes":[{"path":"/e","type":"flat"},{"path":"/d","type":"diskANN"}]`, `"vectorIndexes":[]`, 1)); !isCode(err, BadRequest) {
		t.Errorf("a replace removing the vector indexes: %v", err)
	}
	// An SDK that knows no vector policy replaces without it and without
	// the vector indexes: both stay.
	if err := replace(`{"id":"c","partitionKey":{"paths":["/pk"],"kind":"Hash","version":2},"defaultTtl":60,"indexingPolicy":{"includedPaths":[{"path":"/*"}],"excludedPaths":[{"path":"/e/*"},{"path":"/d/*"}]}}`); err != nil {
		t.Errorf("a replace without the embedding policy: %v", err)
	}
	res, _, err = be.e.ReadContainer(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Body.Get("vectorEmbeddingPolicy").IsDefined() || res.Body.Get("indexingPolicy").Get("vectorIndexes").Len() != 2 {
		t.Errorf("a replace without the vector policies dropped them: %s", res.Body)
	}
}
