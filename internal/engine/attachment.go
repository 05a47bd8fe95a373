package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"time"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Attachments are metadata documents under an item (id, contentType, a
// media link, any other properties), as the service keeps them since it
// stopped storing media itself. They live in the item's logical partition
// and belong to one version of it: each records the sequence number of the
// item it was created under, so an attachment of an item that was deleted,
// or expired, and created again is never seen through the new item. Such
// leftovers are removed with the container.

type attachmentRecord struct {
	ItemSeq uint64          `json:"seq"`
	Rid     string          `json:"rid"`
	Etag    string          `json:"etag"`
	Ts      int64           `json:"ts"`
	Body    json.RawMessage `json:"body"` // user properties, system ones added on read
}

func attachmentPrefix(collRid, pk []byte, id string) []byte {
	k := collPrefix(famAttachment, collRid)
	k = binary.AppendUvarint(k, uint64(len(pk)))
	k = append(k, pk...)
	k = binary.AppendUvarint(k, uint64(len(id)))
	return append(k, id...)
}

// AttachmentRef addresses the attachments of one item.
type AttachmentRef struct {
	ItemRef
	ItemID string
}

// withItem runs fn on the live item ref addresses, in a read or a write.
// now is the operation's stamp, taken with judging as for every item
// operation, so that an item expired once stays expired (ttl.md A3, B1).
func (e *Engine) withItem(r storage.Reader, ref AttachmentRef, now time.Time, fn func(c *containerRecord, pk []byte, item *liveItem) error) error {
	c, err := e.loadContainer(r, ref.DB, ref.Coll)
	if err != nil {
		return err
	}
	pk, derr := c.pointKey(ref.ItemRef)
	if derr != nil {
		return derr
	}
	live, _, err := e.findItem(r, c, pk, ref.ItemID, now)
	if err != nil {
		return err
	}
	if live == nil {
		return errorf(NotFound, "Owner resource does not exist: item '%s' not found.", ref.ItemID)
	}
	return fn(c, pk, live)
}

func (a *attachmentRecord) resource(c *containerRecord, item *liveItem) (*Resource, error) {
	body, err := document.Parse(a.Body)
	if err != nil {
		return nil, err
	}
	itemRid := ridString(itemRid(c.Rid, item.seq()))
	body = body.With("_rid", document.Str(a.Rid)).
		With("_self", document.Str(c.self()+"docs/"+itemRid+"/attachments/"+a.Rid+"/")).
		With("_etag", document.Str(a.Etag)).
		With("_ts", document.Int(a.Ts))
	return &Resource{Body: body, Etag: a.Etag, Rid: a.Rid}, nil
}

// validateAttachment checks a body and strips its system properties.
func validateAttachment(body document.Value) (string, []byte, *Error) {
	id, derr := bodyID(body)
	if derr != nil {
		return "", nil, derr
	}
	if derr := validateResourceID(id); derr != nil {
		return "", nil, derr
	}
	if ct := body.Get("contentType"); ct.IsDefined() && ct.Kind() != document.String {
		return "", nil, errorf(BadRequest, "The attachment property 'contentType' must be a string.")
	}
	if m := body.Get("media"); m.IsDefined() && m.Kind() != document.String {
		return "", nil, errorf(BadRequest, "The attachment property 'media' must be a string.")
	}
	var fields []document.Field
	for _, f := range body.Fields() {
		switch f.Name {
		case "_rid", "_self", "_etag", "_ts":
		default:
			fields = append(fields, f)
		}
	}
	return id, document.Obj(fields).AppendJSON(nil), nil
}

// CreateAttachment creates (or, with upsert, replaces) an attachment.
func (e *Engine) CreateAttachment(ctx context.Context, ref AttachmentRef, body document.Value, upsert bool) (*Resource, bool, error) {
	id, raw, derr := validateAttachment(body)
	if derr != nil {
		return nil, false, derr
	}
	return e.putAttachment(ctx, ref, id, raw, upsert, true, "")
}

// ReplaceAttachment replaces attachment id.
func (e *Engine) ReplaceAttachment(ctx context.Context, ref AttachmentRef, id string, body document.Value, ifMatch string) (*Resource, error) {
	bid, raw, derr := validateAttachment(body)
	if derr != nil {
		return nil, derr
	}
	if bid != id {
		return nil, errorf(BadRequest, "The id in the body ('%s') does not match the addressed attachment ('%s').", bid, id)
	}
	res, _, err := e.putAttachment(ctx, ref, id, raw, true, false, ifMatch)
	return res, err
}

func (e *Engine) putAttachment(ctx context.Context, ref AttachmentRef, id string, raw []byte, mayExist, mayCreate bool, ifMatch string) (*Resource, bool, error) {
	now, done, err := e.judging(ctx, ref.DB, ref.Coll)
	if err != nil {
		return nil, false, err
	}
	defer done()
	var res *Resource
	created := false
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		return e.withItem(tx, ref, now, func(c *containerRecord, pk []byte, item *liveItem) error {
			key := append(attachmentPrefix(c.Rid, pk, ref.ItemID), id...)
			var old attachmentRecord
			found, err := getJSON(tx, key, &old)
			if err != nil {
				return err
			}
			if found && old.ItemSeq != item.seq() {
				found = false // a leftover of an earlier item with this id
			}
			switch {
			case found && !mayExist:
				return conflict()
			case !found && !mayCreate:
				return notFound()
			case found && staleMatch(ifMatch, old.Etag):
				return preconditionFailed()
			}
			n, err := nextCounter(tx, "attachment")
			if err != nil {
				return err
			}
			rec := attachmentRecord{ItemSeq: item.seq(), Ts: now.Unix(), Body: raw,
				Etag: etagFor(c.Rid, n)}
			rec.Rid = old.Rid
			if !found {
				rec.Rid = ridString(binary.BigEndian.AppendUint32(itemRid(c.Rid, item.seq()), uint32(n)))
			}
			if err := setJSON(tx, key, &rec); err != nil {
				return err
			}
			created = !found
			res, err = rec.resource(c, item)
			return err
		})
	})
	return res, created, err
}

// ReadAttachment reads attachment id.
func (e *Engine) ReadAttachment(ctx context.Context, ref AttachmentRef, id string) (*Resource, error) {
	now, done, err := e.judging(ctx, ref.DB, ref.Coll)
	if err != nil {
		return nil, err
	}
	defer done()
	var res *Resource
	err = e.store.View(ctx, func(r storage.Reader) error {
		return e.withItem(r, ref, now, func(c *containerRecord, pk []byte, item *liveItem) error {
			var rec attachmentRecord
			found, err := getJSON(r, append(attachmentPrefix(c.Rid, pk, ref.ItemID), id...), &rec)
			if err != nil {
				return err
			}
			if !found || rec.ItemSeq != item.seq() {
				return notFound()
			}
			res, err = rec.resource(c, item)
			return err
		})
	})
	return res, err
}

// DeleteAttachment deletes attachment id.
func (e *Engine) DeleteAttachment(ctx context.Context, ref AttachmentRef, id, ifMatch string) error {
	now, done, err := e.judging(ctx, ref.DB, ref.Coll)
	if err != nil {
		return err
	}
	defer done()
	return e.store.Update(ctx, func(tx storage.Txn) error {
		return e.withItem(tx, ref, now, func(c *containerRecord, pk []byte, item *liveItem) error {
			key := append(attachmentPrefix(c.Rid, pk, ref.ItemID), id...)
			var rec attachmentRecord
			found, err := getJSON(tx, key, &rec)
			if err != nil {
				return err
			}
			if !found || rec.ItemSeq != item.seq() {
				return notFound()
			}
			if staleMatch(ifMatch, rec.Etag) {
				return preconditionFailed()
			}
			return tx.Delete(key)
		})
	})
}

// ListAttachments returns the attachments of the item and the item's rid.
func (e *Engine) ListAttachments(ctx context.Context, ref AttachmentRef) ([]document.Value, string, error) {
	now, done, err := e.judging(ctx, ref.DB, ref.Coll)
	if err != nil {
		return nil, "", err
	}
	defer done()
	var out []document.Value
	var docRid string
	err = e.store.View(ctx, func(r storage.Reader) error {
		out = nil
		return e.withItem(r, ref, now, func(c *containerRecord, pk []byte, item *liveItem) error {
			docRid = ridString(itemRid(c.Rid, item.seq()))
			return scanPrefix(r, attachmentPrefix(c.Rid, pk, ref.ItemID), func(_, v []byte) (bool, error) {
				var rec attachmentRecord
				if err := json.Unmarshal(v, &rec); err != nil {
					return false, err
				}
				if rec.ItemSeq == item.seq() {
					res, err := rec.resource(c, item)
					if err != nil {
						return false, err
					}
					out = append(out, res.Body)
				}
				return true, nil
			})
		})
	})
	return out, docRid, err
}
