package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Resource is a database, container or offer as the API returns it.
type Resource struct {
	Body document.Value
	Etag string
	Rid  string
}

// Throughput is provisioned throughput asked for when creating a database
// or container, or set on an offer: Manual RU/s, or, when Autoscale,
// AutoscaleMax.
type Throughput struct {
	Manual       int
	Autoscale    bool
	AutoscaleMax int
	// AutoscaleIncrementPercent is autoUpgradePolicy's incrementPercent.
	AutoscaleIncrementPercent int
}

type databaseRecord struct {
	ID       string `json:"id"`
	Rid      []byte `json:"rid"`
	Ts       int64  `json:"ts"`
	Etag     string `json:"etag"`
	OfferRid string `json:"offer,omitempty"`
}

func (d *databaseRecord) ridString() string { return ridString(d.Rid) }

func (d *databaseRecord) body() document.Value {
	rid := d.ridString()
	return document.Obj([]document.Field{
		{Name: "id", Value: document.Str(d.ID)},
		{Name: "_rid", Value: document.Str(rid)},
		{Name: "_self", Value: document.Str("dbs/" + rid + "/")},
		{Name: "_etag", Value: document.Str(d.Etag)},
		{Name: "_colls", Value: document.Str("colls/")},
		{Name: "_users", Value: document.Str("users/")},
		{Name: "_ts", Value: document.Int(d.Ts)},
	})
}

func (d *databaseRecord) resource() *Resource {
	return &Resource{Body: d.body(), Etag: d.Etag, Rid: d.ridString()}
}

// validateResourceID applies the service's rules for database, container
// and other non-item ids.
func validateResourceID(id string) *Error {
	switch {
	case id == "":
		return errorf(BadRequest, "The input name is empty or invalid. Ensure to provide a non-empty id.")
	case len(id) > 255:
		return errorf(BadRequest, "The input name '%s' exceeds the maximum allowed length of 255 characters.", id)
	case strings.ContainsAny(id, `/\#?`) || strings.HasSuffix(id, " ") || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0:
		return errorf(BadRequest, "The input name '%s' is invalid. Ensure to provide a unique non-empty string less than '255' characters. Names cannot contain '/', '\\', '#', '?' or a NUL character, or end with a space.", printableID(id))
	}
	return nil
}

// bodyID extracts and checks the "id" of a request body.
func bodyID(body document.Value) (string, *Error) {
	if body.Kind() != document.Object {
		return "", errorf(BadRequest, "The request body must be a JSON object.")
	}
	idv := body.Get("id")
	if idv.Kind() != document.String {
		if !idv.IsDefined() {
			return "", errorf(BadRequest, "The input content is invalid because the required properties - 'id; ' - are missing")
		}
		return "", errorf(BadRequest, "The input content is invalid because the property 'id' must be a string.")
	}
	return idv.Str(), nil
}

// CreateDatabase creates a database from a request body.
func (e *Engine) CreateDatabase(ctx context.Context, body document.Value, tp *Throughput) (*Resource, error) {
	id, derr := bodyID(body)
	if derr != nil {
		return nil, derr
	}
	if derr := validateResourceID(id); derr != nil {
		return nil, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	var rec databaseRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		found, err := getJSON(tx, databaseKey(id), &databaseRecord{})
		if err != nil {
			return err
		}
		if found {
			return conflict()
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		rec = databaseRecord{ID: id, Rid: binary.BigEndian.AppendUint32(nil, uint32(n)), Ts: now.Unix()}
		rec.Etag = etagFor(rec.Rid, n)
		if tp != nil {
			o, err := e.createOffer(tx, now, tp, "dbs/"+rec.ridString()+"/", rec.ridString())
			if err != nil {
				return err
			}
			rec.OfferRid = o.Rid
		}
		return setJSON(tx, databaseKey(id), &rec)
	})
	if err != nil {
		return nil, fmt.Errorf("create database %q: %w", id, err)
	}
	return rec.resource(), nil
}

// loadDatabase reads a database's record, reusing the decoded form while
// the stored bytes are unchanged. Callers must not modify the result.
func (e *Engine) loadDatabase(r storage.Reader, id string) (*databaseRecord, error) {
	key := databaseKey(id)
	raw, err := r.Get(key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errorf(NotFound, "Database '%s' not found.", id)
	}
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	cached, ok := e.dbCache[id]
	e.mu.Unlock()
	if ok && bytes.Equal(cached.raw, raw) {
		return cached.rec, nil
	}
	var rec databaseRecord
	if err := unmarshalRecord(raw, &rec); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.dbCache[id] = cachedDatabase{raw: bytes.Clone(raw), rec: &rec}
	e.mu.Unlock()
	return &rec, nil
}

type cachedDatabase struct {
	raw []byte
	rec *databaseRecord
}

// ReadDatabase returns a database.
func (e *Engine) ReadDatabase(ctx context.Context, id string) (*Resource, error) {
	var rec *databaseRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		var err error
		rec, err = e.loadDatabase(r, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return rec.resource(), nil
}

// ListDatabases returns every database, in id order.
func (e *Engine) ListDatabases(ctx context.Context) ([]document.Value, error) {
	var out []document.Value
	err := e.store.View(ctx, func(r storage.Reader) error {
		return scanPrefix(r, []byte{famDatabase}, func(_, v []byte) (bool, error) {
			var rec databaseRecord
			if err := unmarshalRecord(v, &rec); err != nil {
				return false, err
			}
			out = append(out, rec.body())
			return true, nil
		})
	})
	return out, err
}

// DeleteDatabase removes a database and everything in it. A non-empty
// ifMatch other than "*" must be the database's etag, or nothing is deleted
// (412).
func (e *Engine) DeleteDatabase(ctx context.Context, id, ifMatch string) error {
	var colls []*containerRecord
	var rec *databaseRecord
	err := e.store.Update(ctx, func(tx storage.Txn) error {
		colls = nil
		var err error
		rec, err = e.loadDatabase(tx, id)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, rec.Etag) {
			return preconditionFailed()
		}
		if err := scanPrefix(tx, containerPrefix(rec.Rid), func(_, v []byte) (bool, error) {
			c, err := decodeContainer(v)
			if err != nil {
				return false, err
			}
			colls = append(colls, c)
			return true, nil
		}); err != nil {
			return err
		}
		for _, c := range colls {
			if err := e.removeContainerMeta(tx, c); err != nil {
				return err
			}
		}
		if rec.OfferRid != "" {
			if err := tx.Delete(offerKey(rec.OfferRid)); err != nil {
				return err
			}
		}
		if err := deleteUsers(tx, rec.Rid); err != nil {
			return err
		}
		return tx.Delete(databaseKey(id))
	})
	if err != nil {
		return err
	}
	for _, c := range colls {
		e.containerGone(ctx, c)
	}
	for _, c := range colls {
		if err := e.dropContainerData(ctx, c); err != nil {
			return fmt.Errorf("delete database %q: %w", id, err)
		}
	}
	return nil
}

func unmarshalRecord(v []byte, into any) error {
	if err := jsonUnmarshal(v, into); err != nil {
		return fmt.Errorf("corrupt metadata record: %w", err)
	}
	return nil
}

// isNotFound reports whether err is the engine's NotFound.
func isNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == NotFound
}
