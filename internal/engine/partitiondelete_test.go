package engine

import (
	"context"
	"strconv"
	"testing"
)

// A delete of all items by partition key removes every item of that
// partition, over several pages of deletes, and nothing else; the usage
// counts and queries see it at once.
func TestDeleteAllItemsByPartitionKey(t *testing.T) {
	be := newBatchEnv(t, "null")
	for i := range 2*partitionDeletePage + 30 {
		be.seed(t, `{"id":"g`+strconv.Itoa(i)+`","pk":"gone","n":`+strconv.Itoa(i)+`}`)
	}
	be.seed(t, `{"id":"k1","pk":"kept"}`, `{"id":"g1","pk":"kept"}`)
	ctx := context.Background()
	if _, err := be.e.DeleteAllItemsByPartitionKey(ctx, batchRef("")); !isCode(err, BadRequest) {
		t.Errorf("without a partition key: %v, want 400", err)
	}
	res, err := be.e.DeleteAllItemsByPartitionKey(ctx, batchRef(`["gone"]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(2*partitionDeletePage+30) * writeCharge(0); res.Charge != want {
		t.Errorf("charge %v, want %v: one delete's for each item", res.Charge, want)
	}
	for key, want := range map[string]string{`["gone"]`: "0", `["kept"]`: "2", "": "2"} {
		page, err := be.e.QueryItems(ctx, QueryParams{ItemRef: batchRef(key), Query: "SELECT VALUE COUNT(1) FROM c", CrossPartition: true, RangeID: map[bool]string{true: "0"}[key == ""]})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 || string(page.Items[0]) != want {
			t.Errorf("count under %q: %s, want %s", key, page.Items, want)
		}
	}
	_, usage, err := be.e.ReadContainer(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if usage.DocumentsCount != 2 {
		t.Errorf("documentsCount %d, want 2", usage.DocumentsCount)
	}
	if res, err := be.e.DeleteAllItemsByPartitionKey(ctx, batchRef(`["none"]`)); err != nil || res.Charge != 0 {
		t.Errorf("an empty partition: %v, %v", res, err)
	}
}

// With a hierarchical key, only the whole key names what to delete: a
// prefix is refused, as the service refuses it ("Attempting to delete
// using intermediate partition keys … results in an error", the delete by
// partition key article's limitations), and deletes nothing.
func TestDeleteAllItemsByPartitionKeyNeedsTheWholeKey(t *testing.T) {
	be := newBatchEnvWith(t, `{"id":"c","partitionKey":{"paths":["/t","/u"],"kind":"MultiHash","version":2}}`)
	be.seed(t, `{"id":"1","t":"a","u":"x"}`, `{"id":"2","t":"a","u":"y"}`, `{"id":"3","t":"b","u":"x"}`)
	ctx := context.Background()
	for _, prefix := range []string{`["a"]`, `["none"]`} {
		if _, err := be.e.DeleteAllItemsByPartitionKey(ctx, batchRef(prefix)); !isCode(err, BadRequest) {
			t.Errorf("the prefix %s: %v, want 400", prefix, err)
		}
	}
	if _, err := be.e.DeleteAllItemsByPartitionKey(ctx, batchRef(`["a","x"]`)); err != nil {
		t.Fatal(err)
	}
	_, usage, err := be.e.ReadContainer(ctx, "db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if usage.DocumentsCount != 2 {
		t.Errorf("documentsCount %d, want 2: only the whole key's item deleted", usage.DocumentsCount)
	}
}
