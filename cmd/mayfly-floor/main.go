// Command mayfly-floor is the performance floor for `make bench`: an HTTPS
// server that answers exactly the requests cmd/mayfly-load makes, with
// canned bodies, after checking each request's master-key signature.
//
// It stores nothing and evaluates nothing, so its throughput under the load
// tool is what the transport, TLS, the signature check and the SDK itself
// cost. Its answers are the bytes a faithful server sends: the headers
// Mayfly sends with an item operation or a query page (canned values of the
// same length), items of -doc-size bytes with their system properties, and
// a written item echoed with them, so that the client parses as much from
// it as from Mayfly. Mayfly's throughput as a ratio of the floor's is then the share of
// the ceiling that Mayfly's own work leaves. With -mayfly-h2 it serves
// HTTP/2 with Mayfly's own server (internal/h2), as Mayfly does, rather
// than net/http's. With -sync-dir it is the synced floor: each create and
// upsert is answered only once its body is in a log file that a group
// commit has synced (syncLog), so that a durable server's throughput can be
// set against what durability alone allows on the machine.
//
// Requests it answers: GET / (account), database and container create and
// read, database delete, the partition key ranges feed (with 304 once the
// client has the current etag), item create, upsert and read, and queries on
// a container, which return one item whose id is the @id parameter.
// Anything else gets 404 with a JSON body naming the request.
package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/h2"
	"github.com/mayfly-db/mayfly/internal/tlscert"
)

const emulatorKey = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw=="

func main() {
	addr := flag.String("addr", ":8082", "listen address")
	key := flag.String("key", emulatorKey, "account key requests must be signed with")
	rangeRows := flag.Int("range-rows", 156, "rows a query without an @id parameter returns, in pages of 100 (mayfly-load's range phase)")
	ownH2 := flag.Bool("mayfly-h2", false, "serve HTTP/2 with Mayfly's own server (internal/h2) instead of net/http's")
	syncDir := flag.String("sync-dir", "", "answer creates and upserts once their bodies are synced to a log file in this directory (the synced floor)")
	docSize := flag.Int("doc-size", 256, "approximate size in bytes of the items it returns, as mayfly-load's -doc-size")
	flag.Parse()

	if err := run(*addr, *key, *rangeRows, *docSize, *ownH2, *syncDir); err != nil {
		fmt.Fprintln(os.Stderr, "mayfly-floor:", err)
		os.Exit(1)
	}
}

func run(addr, key string, rangeRows, docSize int, ownH2 bool, syncDir string) error {
	verify, err := newVerifier(auth.Config{Keys: []string{key}})
	if err != nil {
		return err
	}
	var log *syncLog
	if syncDir != "" {
		if log, err = openSyncLog(syncDir); err != nil {
			return err
		}
		defer func() {
			syncs, durable, mean := log.stats()
			slog.Info("mayfly-floor's log", "syncs", syncs, "writes", durable, "mean sync", mean)
			log.Close()
		}()
	}
	cert, certPEM, err := tlscert.LoadOrCreate("", time.Now())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           &floor{verify: verify, certPEM: certPEM, rangeRows: rangeRows, payload: payloadOf(docSize), log: log},
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	if ownH2 {
		srv.TLSConfig.NextProtos = []string{"h2", "http/1.1"}
		(&h2.Server{}).Configure(srv)
	}
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	slog.Info("mayfly-floor is ready", "addr", ln.Addr().String(), "synced", log != nil)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-sig:
		return srv.Close()
	}
}

type floor struct {
	verify  verifier
	certPEM []byte
	// rangeRows is how many rows a range query (one without @id) returns
	// over its pages.
	rangeRows int
	// payload is the "payload" property of the items it returns, sized as
	// mayfly-load's documents (payloadOf).
	payload string
	// log, when set, makes every write durable before it is answered.
	log *syncLog
}

// pkRangesETag is the version of the one partition key range every
// container has.
const pkRangesETag = `"pkranges-1"`

func (f *floor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/_explorer/emulator.pem" {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(f.certPEM)
		return
	}
	h := w.Header()
	h.Set("x-ms-request-charge", "1")
	h.Set("x-ms-session-token", "0:-1#1")
	if id := r.Header.Get("x-ms-activity-id"); id != "" {
		h.Set("x-ms-activity-id", id)
	} else {
		h.Set("x-ms-activity-id", "00000000-0000-0000-0000-000000000000")
	}
	// Mayfly's common headers; the date is the HTTP server's own.
	h.Set("x-ms-schemaversion", "1.18")
	h.Set("x-ms-serviceversion", "version=2.14.0.0")
	h.Set("x-ms-gatewayversion", "version=2.14.0")

	res, err := f.verify(r)
	if err != nil {
		var ae *auth.Error
		if errors.As(err, &ae) {
			writeError(w, ae.Status, ae.Code, ae.Message)
		} else {
			writeError(w, http.StatusUnauthorized, "Unauthorized", err.Error())
		}
		return
	}

	segs := res.Segments
	switch {
	case len(segs) == 0 && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, account(r))

	case len(segs) == 1 && segs[0] == "dbs" && r.Method == http.MethodPost:
		var body struct{ ID string }
		if !readJSON(w, r, &body) {
			return
		}
		writeJSON(w, http.StatusCreated, database(body.ID))
	case len(segs) == 2 && segs[0] == "dbs" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, database(segs[1]))
	case len(segs) == 2 && segs[0] == "dbs" && r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)

	case len(segs) == 3 && segs[2] == "colls" && r.Method == http.MethodPost:
		var body map[string]any
		if !readJSON(w, r, &body) {
			return
		}
		id, _ := body["id"].(string)
		writeJSON(w, http.StatusCreated, container(id, body["partitionKey"]))
	case len(segs) == 4 && segs[2] == "colls" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, container(segs[3], nil))

	case len(segs) == 5 && segs[4] == "pkranges" && r.Method == http.MethodGet:
		h.Set("etag", pkRangesETag)
		if r.Header.Get("If-None-Match") == pkRangesETag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		writeJSON(w, http.StatusOK, pkRanges)

	case len(segs) == 5 && segs[4] == "docs" && r.Method == http.MethodPost:
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/query+json") {
			f.query(w, r)
			return
		}
		f.write(w, r, segs)
	case len(segs) == 6 && segs[4] == "docs" && r.Method == http.MethodGet:
		itemHeaders(h, segs)
		writeBody(w, http.StatusOK, f.appendItem(nil, segs[5], partitionKey(r)))

	default:
		writeError(w, http.StatusNotFound, "NotFound", fmt.Sprintf("the floor server does not answer %s %s", r.Method, r.URL.Path))
	}
}

const itemETag = `"00000000-0000-0000-0000-000000000001"`

// write answers a create or upsert. The body is read in full, as any
// server must, and echoed unless the client asked for a minimal response.
func (f *floor) write(w http.ResponseWriter, r *http.Request, segs []string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	if f.log != nil {
		if err := f.log.append(body); err != nil {
			writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
			return
		}
	}
	status := http.StatusCreated
	if strings.EqualFold(r.Header.Get("x-ms-documentdb-is-upsert"), "true") {
		status = http.StatusOK
	}
	itemHeaders(w.Header(), segs)
	if strings.Contains(r.Header.Get("Prefer"), "return=minimal") {
		w.WriteHeader(status)
		return
	}
	writeBody(w, status, withSystemProperties(body))
}

// itemHeaders sets the headers Mayfly sends with an item's read or write,
// besides the common ones, with canned values of the same length.
func itemHeaders(h http.Header, segs []string) {
	h.Set("etag", itemETag)
	h.Set("lsn", "1")
	h.Set("x-ms-documentdb-partitionkeyrangeid", "0")
	h.Set("x-ms-content-path", collRID)
	if len(segs) >= 4 {
		h.Set("x-ms-alt-content-path", "dbs/"+segs[1]+"/colls/"+segs[3])
	}
}

// systemProperties ends a stored item as Mayfly's do: the same properties,
// values of the same length.
const systemProperties = `"_rid":"Sl8fAG8cXgABAAAAAAAAAA==","_self":"dbs/` + dbRID + `/colls/` + collRID +
	`/docs/Sl8fAG8cXgABAAAAAAAAAA==/","_etag":"\"00000000-0000-0000-0000-000000000001\"","_attachments":"attachments/","_ts":1700000000}`

// withSystemProperties returns a written item as the service answers it:
// the body with the system properties added. A body that is not a JSON
// object is returned as it is.
func withSystemProperties(body []byte) []byte {
	doc := bytes.TrimRight(body, " \t\r\n")
	if len(doc) < 2 || doc[len(doc)-1] != '}' {
		return body
	}
	out := make([]byte, 0, len(doc)+len(systemProperties)+1)
	out = append(out, doc[:len(doc)-1]...)
	if len(bytes.TrimSpace(doc[1:len(doc)-1])) > 0 {
		out = append(out, ',')
	}
	return append(out, systemProperties...)
}

// payloadOf is the payload mayfly-load gives documents of size bytes.
func payloadOf(size int) string { return strings.Repeat("x", max(size-60, 0)) }

// appendItem appends the canned item id in partition pk, with f's payload.
func (f *floor) appendItem(b []byte, id string, pk any) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"pk":`...)
	if s, ok := pk.(string); ok {
		b = strconv.AppendQuote(b, s)
	} else {
		v, _ := json.Marshal(pk)
		b = append(b, v...)
	}
	b = append(b, `,"n":1,"payload":"`...)
	b = append(b, f.payload...)
	b = append(b, `",`...)
	return append(b, systemProperties...)
}

func (f *floor) query(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Query      string
		Parameters []struct {
			Name  string
			Value any
		}
	}
	if !readJSON(w, r, &q) {
		return
	}
	id := ""
	for _, p := range q.Parameters {
		if p.Name == "@id" {
			id, _ = p.Value.(string)
		}
	}
	h := w.Header()
	if strings.EqualFold(r.Header.Get("x-ms-documentdb-populatequerymetrics"), "true") {
		// With the metrics Mayfly explains its plan.
		h.Set("x-ms-documentdb-query-metrics", queryMetrics)
		h.Set("x-ms-mayfly-query-plan", "scope=partition;point;records=1;cost=0")
		h.Set("x-ms-mayfly-index-entries-read", "0")
	}
	pk := partitionKey(r)
	body := []byte(`{"_rid":"` + collRID + `","Documents":[`)
	n := 1
	if id == "" {
		// A range query: rangeRows canned rows in pages of 100, the
		// continuation saying how many were sent.
		sent, _ := strconv.Atoi(r.Header.Get("x-ms-continuation"))
		n = min(100, max(f.rangeRows-sent, 0))
		for i := range n {
			if i > 0 {
				body = append(body, ',')
			}
			body = f.appendItem(body, "item-"+strconv.Itoa(sent+i), pk)
		}
		if sent+n < f.rangeRows {
			h.Set("x-ms-continuation", strconv.Itoa(sent+n))
		}
	} else {
		body = f.appendItem(body, id, pk)
	}
	body = append(body, `],"_count":`...)
	body = strconv.AppendInt(body, int64(n), 10)
	body = append(body, '}')
	h.Set("x-ms-item-count", strconv.Itoa(n))
	h.Set("x-ms-content-path", collRID)
	h.Set("x-ms-cosmos-query-execution-info", `{"reverseRidEnabled":false,"reverseIndexScan":false}`)
	writeBody(w, http.StatusOK, body)
}

const queryMetrics = "totalExecutionTimeInMs=0.01;queryCompileTimeInMs=0.00;queryLogicalPlanBuildTimeInMs=0.00;" +
	"queryPhysicalPlanBuildTimeInMs=0.00;queryOptimizationTimeInMs=0.00;VMExecutionTimeInMs=0.00;" +
	"indexLookupTimeInMs=0.00;documentLoadTimeInMs=0.00;systemFunctionExecuteTimeInMs=0.00;" +
	"userFunctionExecuteTimeInMs=0.00;retrievedDocumentCount=1;retrievedDocumentSize=100;" +
	"outputDocumentCount=1;outputDocumentSize=100;writeOutputTimeInMs=0.00;indexUtilizationRatio=1.00"

// Canned resource ids: one database, one container, for every name.
const (
	dbRID   = "Sl8fAA=="
	collRID = "Sl8fAG8cXgA="
)

func account(r *http.Request) map[string]any {
	endpoint := "https://" + r.Host + "/"
	loc := []map[string]string{{"name": "South Central US", "databaseAccountEndpoint": endpoint}}
	return map[string]any{
		"id": "localhost", "_rid": "localhost", "_self": "", "_dbs": "//dbs/", "media": "//media/", "addresses": "//addresses/",
		"writableLocations":            loc,
		"readableLocations":            loc,
		"enableMultipleWriteLocations": false,
		"userConsistencyPolicy":        map[string]string{"defaultConsistencyLevel": "Session"},
		"userReplicationPolicy":        map[string]int{"minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"systemReplicationPolicy":      map[string]int{"minReplicaSetSize": 1, "maxReplicasetSize": 4},
		"readPolicy":                   map[string]int{"primaryReadCoefficient": 1, "secondaryReadCoefficient": 1},
		"queryEngineConfiguration":     "{}",
	}
}

func database(id string) map[string]any {
	return map[string]any{
		"id": id, "_rid": dbRID, "_self": "dbs/" + dbRID + "/", "_etag": `"00000000-0000-0000-0000-000000000002"`,
		"_ts": 1700000000, "_colls": "colls/", "_users": "users/",
	}
}

func container(id string, pk any) map[string]any {
	if pk == nil {
		pk = map[string]any{"paths": []string{"/pk"}, "kind": "Hash", "version": 2}
	}
	return map[string]any{
		"id": id, "_rid": collRID, "_self": "dbs/" + dbRID + "/colls/" + collRID + "/",
		"_etag": `"00000000-0000-0000-0000-000000000003"`, "_ts": 1700000000,
		"_docs": "docs/", "_sprocs": "sprocs/", "_triggers": "triggers/", "_udfs": "udfs/", "_conflicts": "conflicts/",
		"partitionKey": pk,
		"indexingPolicy": map[string]any{
			"indexingMode": "consistent", "automatic": true,
			"includedPaths": []any{map[string]string{"path": "/*"}},
			"excludedPaths": []any{map[string]string{"path": `/"_etag"/?`}},
		},
		"conflictResolutionPolicy": map[string]string{"mode": "LastWriterWins", "conflictResolutionPath": "/_ts", "conflictResolutionProcedure": ""},
		"geospatialConfig":         map[string]string{"type": "Geography"},
	}
}

var pkRanges = map[string]any{
	"_rid": collRID, "_count": 1,
	"PartitionKeyRanges": []any{map[string]any{
		"id": "0", "_rid": "Sl8fAG8cXgACAAAAAAAAUA==", "_self": "dbs/" + dbRID + "/colls/" + collRID + "/pkranges/Sl8fAG8cXgACAAAAAAAAUA==/",
		"_etag": `"00000000-0000-0000-0000-000000000004"`, "_ts": 1700000000,
		"minInclusive": "", "maxExclusive": "FF", "ridPrefix": 0, "throughputFraction": 1,
		"status": "online", "parents": []string{}, "ownedArchivalPKRangeIds": []string{}, "lsn": 1,
	}},
}

// partitionKey returns the single component of the request's partition key
// header, or nil.
func partitionKey(r *http.Request) any {
	var pk []any
	if err := json.Unmarshal([]byte(r.Header.Get("x-ms-documentdb-partitionkey")), &pk); err != nil || len(pk) != 1 {
		return nil
	}
	return pk[0]
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "body is not JSON: "+err.Error())
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	body, _ := json.Marshal(map[string]string{"code": code, "message": message})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}
