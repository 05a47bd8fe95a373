package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/mayfly-db/mayfly/internal/transfer"
)

func transferClient(t *testing.T, e *env) *transfer.Client {
	t.Helper()
	c, err := transfer.NewClient(transfer.ClientOptions{Endpoint: e.url, Key: emulatorKey, Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// mayfly export writes a database as JSON lines, page by page; mayfly
// import makes the same containers and items elsewhere, skips what is
// there on a second run, and with --as-of export keeps expiry instants.
func TestExportAndImport(t *testing.T) {
	ctx := context.Background()
	src, dst := start(t), start(t)
	db := src.database("db")
	def := int32(3600)
	c1 := src.container(db, azcosmos.ContainerProperties{ID: "plain", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	c2 := src.container(db, azcosmos.ContainerProperties{ID: "ttl", DefaultTimeToLive: &def,
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/a/b"}}})
	const n = 250 // more than one page of 100
	for i := range n {
		body := `{"id":"i` + itoa(i) + `","pk":"p` + itoa(i%7) + `","n":` + itoa(i) + `,"big":12345678901234567890}`
		if _, err := c1.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"+itoa(i%7)), []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Ids a path cannot address: a second import still finds them there.
	odd := []string{"a/b", "h#ash", "q?x", "50%25off", "tail ", `back\\slash`}
	for _, id := range odd {
		if _, err := c1.CreateItem(ctx, azcosmos.NewPartitionKeyString("odd"), []byte(`{"id":"`+id+`","pk":"odd"}`), nil); err != nil {
			t.Fatalf("create %q: %v", id, err)
		}
	}
	if _, err := c2.CreateItem(ctx, azcosmos.NewPartitionKeyString("x"), []byte(`{"id":"short","a":{"b":"x"},"ttl":2}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.CreateItem(ctx, azcosmos.NewPartitionKeyString("x"), []byte(`{"id":"long","a":{"b":"x"}}`), nil); err != nil {
		t.Fatal(err)
	}
	exported := time.Now()

	var dump bytes.Buffer
	got, err := transferClient(t, src).Export(ctx, &dump, transfer.ExportOptions{Database: "db", PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got != n+int64(len(odd))+2 {
		t.Fatalf("exported %d items, want %d", got, n+int64(len(odd))+2)
	}
	if lines := strings.Count(dump.String(), "\n"); lines != n+len(odd)+4 {
		t.Fatalf("%d lines, want %d (two container lines)", lines, n+len(odd)+4)
	}

	// "short" has 2 s to live at export; once they are past, --as-of
	// export leaves it out and gives "long" what remains of its hour.
	time.Sleep(time.Until(exported.Add(2500 * time.Millisecond)))
	to := transferClient(t, dst)
	st, err := to.Import(ctx, bytes.NewReader(dump.Bytes()), transfer.ImportOptions{Database: "db", AsOf: transfer.AsOfExport})
	if err != nil {
		t.Fatal(err)
	}
	if st.Imported != n+int64(len(odd))+1 || st.Expired != 1 || st.Present != 0 {
		t.Fatalf("first import: %+v, want %d imported, 1 expired", st, n+int64(len(odd))+1)
	}
	st, err = to.Import(ctx, bytes.NewReader(dump.Bytes()), transfer.ImportOptions{Database: "db", AsOf: transfer.AsOfExport})
	if err != nil {
		t.Fatal(err)
	}
	if st.Imported != 0 || st.Present != n+int64(len(odd))+1 {
		t.Fatalf("second import: %+v, want all %d already there", st, n+int64(len(odd))+1)
	}
	// An empty dump makes no database.
	if _, err := to.Import(ctx, strings.NewReader(""), transfer.ImportOptions{Database: "nothing"}); err != nil {
		t.Fatal(err)
	}
	if nothing, err := dst.client.NewDatabase("nothing"); err != nil {
		t.Fatal(err)
	} else if _, err := nothing.Read(ctx, nil); err == nil {
		t.Errorf("an empty dump made database nothing")
	}
	d1, err := dst.client.NewContainer("db", "plain")
	if err != nil {
		t.Fatal(err)
	}
	r, err := d1.ReadItem(ctx, azcosmos.NewPartitionKeyString("p3"), "i10", nil)
	if err != nil {
		t.Fatal(err)
	}
	var item map[string]json.RawMessage
	if err := json.Unmarshal(r.Value, &item); err != nil {
		t.Fatal(err)
	}
	// Numbers travel as the source wrote them (a number past 2^53 as
	// the double the service keeps).
	sr, err := c1.ReadItem(ctx, azcosmos.NewPartitionKeyString("p3"), "i10", nil)
	if err != nil {
		t.Fatal(err)
	}
	var orig map[string]json.RawMessage
	if err := json.Unmarshal(sr.Value, &orig); err != nil {
		t.Fatal(err)
	}
	if string(item["n"]) != "10" || string(item["big"]) != string(orig["big"]) {
		t.Errorf("imported item: n %s, big %s (source %s)", item["n"], item["big"], orig["big"])
	}
	d2, err := dst.client.NewContainer("db", "ttl")
	if err != nil {
		t.Fatal(err)
	}
	props, err := d2.Read(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := props.ContainerProperties; p.DefaultTimeToLive == nil || *p.DefaultTimeToLive != 3600 || p.PartitionKeyDefinition.Paths[0] != "/a/b" {
		t.Errorf("imported container: %+v", p)
	}
	r, err = d2.ReadItem(ctx, azcosmos.NewPartitionKeyString("x"), "long", nil)
	if err != nil {
		t.Fatal(err)
	}
	item = nil
	if err := json.Unmarshal(r.Value, &item); err != nil {
		t.Fatal(err)
	}
	var ttl float64
	if err := json.Unmarshal(item["ttl"], &ttl); err != nil || ttl < 3590 || ttl > 3598 {
		t.Errorf("long's ttl after --as-of export: %s, want what remained of 3600 s", item["ttl"])
	}
}

// An import line whose item conflicts with another item by a unique key
// of the container is an error, not an item "already there": the item is
// not imported. An item of the same id is there, and is skipped.
func TestImportUniqueKeyConflictIsAnError(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	c := e.container(e.database("db"), azcosmos.ContainerProperties{ID: "u",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}},
		UniqueKeyPolicy:        &azcosmos.UniqueKeyPolicy{UniqueKeys: []azcosmos.UniqueKey{{Paths: []string{"/email"}}}}})
	if _, err := c.CreateItem(ctx, azcosmos.NewPartitionKeyString("p"), []byte(`{"id":"a","pk":"p","email":"x@example.com"}`), nil); err != nil {
		t.Fatal(err)
	}
	header := `{"$container":{"id":"u","partitionKey":{"paths":["/pk"],"kind":"Hash"}}}` + "\n"
	st, err := transferClient(t, e).Import(ctx, strings.NewReader(header+`{"id":"a","pk":"p","email":"x@example.com"}`+"\n"), transfer.ImportOptions{Database: "db"})
	if err != nil || st.Present != 1 || st.Imported != 0 {
		t.Fatalf("import of an item already there: %+v, %v", st, err)
	}
	_, err = transferClient(t, e).Import(ctx, strings.NewReader(header+`{"id":"b","pk":"p","email":"x@example.com"}`+"\n"), transfer.ImportOptions{Database: "db"})
	if err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("import of an item a unique key refuses: %v, want a 409 error", err)
	}
}

// An import into a server that enforces throughput waits out its 429s
// and imports every item.
func TestImportWaitsOutThrottling(t *testing.T) {
	ctx := context.Background()
	e := start(t, withEnforcedThroughput)
	tp := azcosmos.NewManualThroughputProperties(400)
	if _, err := e.database("db").CreateContainer(ctx, azcosmos.ContainerProperties{ID: "t",
		PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}}, &azcosmos.CreateContainerOptions{ThroughputProperties: &tp}); err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	lines.WriteString(`{"$container":{"id":"t","partitionKey":{"paths":["/pk"],"kind":"Hash"}}}` + "\n")
	const n = 200 // about 1,200 RU at 6 or so each: three seconds of 400 RU/s
	for i := range n {
		lines.WriteString(`{"id":"i` + itoa(i) + `","pk":"p","pad":"` + strings.Repeat("x", 200) + `"}` + "\n")
	}
	st, err := transferClient(t, e).Import(ctx, strings.NewReader(lines.String()), transfer.ImportOptions{Database: "db"})
	if err != nil || st.Imported != n {
		t.Fatalf("import against enforced throughput: %+v, %v; want %d imported", st, err, n)
	}
}
