package engine

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/partition"
	"github.com/mayfly-db/mayfly/internal/storage"
)

// Users and permissions live under a database. A user's record is keyed by
// its database's rid and its id; a permission's by its user's rid and its
// id, so renaming a user (a replace with a new id) moves one record and
// leaves its permissions, and a resource token (which names the user's rid)
// keeps working across the rename.

type userRecord struct {
	ID   string `json:"id"`
	Rid  []byte `json:"rid"` // database rid (4) + user number (4)
	Ts   int64  `json:"ts"`
	Etag string `json:"etag"`
}

func (u *userRecord) self() string {
	return "dbs/" + ridString(u.Rid[:4]) + "/users/" + ridString(u.Rid) + "/"
}

func (u *userRecord) resource() *Resource {
	body := document.Obj([]document.Field{
		{Name: "id", Value: document.Str(u.ID)},
		{Name: "_rid", Value: document.Str(ridString(u.Rid))},
		{Name: "_self", Value: document.Str(u.self())},
		{Name: "_etag", Value: document.Str(u.Etag)},
		{Name: "_permissions", Value: document.Str("permissions/")},
		{Name: "_ts", Value: document.Int(u.Ts)},
	})
	return &Resource{Body: body, Etag: u.Etag, Rid: ridString(u.Rid)}
}

// Permission modes.
const (
	PermissionRead = "Read"
	PermissionAll  = "All"
)

type permissionRecord struct {
	ID      string `json:"id"`
	UserRid []byte `json:"user"`
	Rid     []byte `json:"rid"` // user rid (8) + permission number (4)
	Ts      int64  `json:"ts"`
	Etag    string `json:"etag"`
	Mode    string `json:"mode"`
	// Written is permissionMode as the client wrote it ("all", "Read"…),
	// which the service returns unchanged; Mode is its canonical form.
	Written  string `json:"written,omitempty"`
	Resource string `json:"resource"`
	// PartitionKey is resourcePartitionKey as JSON, or empty.
	PartitionKey string `json:"pk,omitempty"`
	// Names is Resource addressed by name when Resource is the rid-based
	// _self link the DocumentDB-era SDKs give; empty otherwise.
	Names string `json:"names,omitempty"`
}

// granted is the name-based link of the resource the permission grants.
func (p *permissionRecord) granted() string {
	if p.Names != "" {
		return p.Names
	}
	return p.Resource
}

// Permission is a permission as the API returns it, with what a resource
// token issued for it must name (Ref) and what it grants (Grant).
type Permission struct {
	Resource
	Ref   PermissionRef
	Grant Grant
}

// PermissionRef identifies one version of a permission: its user's rid,
// its id and its etag. Every write of the permission changes the etag, so
// tokens issued before a replace stop working, as do tokens of a deleted
// permission.
type PermissionRef struct {
	UserRid string
	ID      string
	Etag    string
}

// Grant is what a permission allows: Mode is PermissionRead or
// PermissionAll; Link the name-based link of a database, container, item or script,
// split into its segments; PartitionKey, when HasKey, the one logical
// partition it is limited to.
type Grant struct {
	Mode         string
	Link         []string
	PartitionKey partition.Key
	HasKey       bool
}

func (p *permissionRecord) resource() *Permission {
	fields := []document.Field{
		{Name: "id", Value: document.Str(p.ID)},
		{Name: "permissionMode", Value: document.Str(cmp.Or(p.Written, p.Mode))},
		{Name: "resource", Value: document.Str(p.Resource)},
	}
	g := Grant{Mode: p.Mode, Link: strings.Split(p.granted(), "/")}
	if p.PartitionKey != "" {
		if v, err := document.Parse([]byte(p.PartitionKey)); err == nil {
			fields = append(fields, document.Field{Name: "resourcePartitionKey", Value: v})
		}
		if k, err := partition.ParseHeader(p.PartitionKey); err == nil {
			g.PartitionKey, g.HasKey = k, true
		}
	}
	rid := ridString(p.Rid)
	fields = append(fields,
		document.Field{Name: "_rid", Value: document.Str(rid)},
		document.Field{Name: "_self", Value: document.Str("dbs/" + ridString(p.UserRid[:4]) + "/users/" + ridString(p.UserRid) + "/permissions/" + rid + "/")},
		document.Field{Name: "_etag", Value: document.Str(p.Etag)},
		document.Field{Name: "_ts", Value: document.Int(p.Ts)},
	)
	return &Permission{
		Resource: Resource{Body: document.Obj(fields), Etag: p.Etag, Rid: rid},
		Ref:      PermissionRef{UserRid: ridString(p.UserRid), ID: p.ID, Etag: p.Etag},
		Grant:    g,
	}
}

// CreateUser creates a user in database db.
func (e *Engine) CreateUser(ctx context.Context, db string, body document.Value) (*Resource, error) {
	id, derr := userBodyID(body)
	if derr != nil {
		return nil, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	var u userRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		d, err := e.loadDatabase(tx, db)
		if err != nil {
			return err
		}
		if found, err := getJSON(tx, userKey(d.Rid, id), &userRecord{}); err != nil {
			return err
		} else if found {
			return conflict()
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		u = userRecord{ID: id, Rid: binary.BigEndian.AppendUint32(bytes.Clone(d.Rid), uint32(n)), Ts: now.Unix()}
		u.Etag = etagFor(u.Rid, n)
		return setJSON(tx, userKey(d.Rid, id), &u)
	})
	if err != nil {
		return nil, fmt.Errorf("create user %q: %w", id, err)
	}
	return u.resource(), nil
}

// UpsertUser creates the user the body names in database db, or, when one
// with its id exists, writes it anew (a new _etag and _ts, the same _rid).
// created says which.
func (e *Engine) UpsertUser(ctx context.Context, db string, body document.Value) (*Resource, bool, error) {
	id, derr := userBodyID(body)
	if derr != nil {
		return nil, false, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, false, err
	}
	var u userRecord
	created := false
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		d, err := e.loadDatabase(tx, db)
		if err != nil {
			return err
		}
		var old userRecord
		found, err := getJSON(tx, userKey(d.Rid, id), &old)
		if err != nil {
			return err
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		rid := old.Rid
		if created = !found; created {
			rid = binary.BigEndian.AppendUint32(bytes.Clone(d.Rid), uint32(n))
		}
		u = userRecord{ID: id, Rid: rid, Ts: now.Unix(), Etag: etagFor(rid, n)}
		return setJSON(tx, userKey(d.Rid, id), &u)
	})
	if err != nil {
		return nil, false, fmt.Errorf("upsert user %q: %w", id, err)
	}
	return u.resource(), created, nil
}

func userBodyID(body document.Value) (string, *Error) {
	id, derr := bodyID(body)
	if derr != nil {
		return "", derr
	}
	if derr := validateResourceID(id); derr != nil {
		return "", derr
	}
	return id, nil
}

// loadUser reads user id of database db: NotFound names which is missing.
func (e *Engine) loadUser(r storage.Reader, db, id string) (*databaseRecord, *userRecord, error) {
	d, err := e.loadDatabase(r, db)
	if err != nil {
		if isNotFound(err) {
			return nil, nil, &Error{Code: NotFound, SubStatus: SubOwnerResourceNotFound, Message: fmt.Sprintf("Owner resource does not exist: database '%s' not found.", db)}
		}
		return nil, nil, err
	}
	var u userRecord
	found, err := getJSON(r, userKey(d.Rid, id), &u)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		return nil, nil, errorf(NotFound, "Resource Not Found. User '%s' does not exist in database '%s'.", id, db)
	}
	return d, &u, nil
}

// ReadUser returns user id of database db.
func (e *Engine) ReadUser(ctx context.Context, db, id string) (*Resource, error) {
	var u *userRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		var err error
		_, u, err = e.loadUser(r, db, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return u.resource(), nil
}

// ReplaceUser replaces user id; a new id in the body renames it (409 when
// another user has that id). ifMatch, when set and not "*", must be the
// user's etag.
func (e *Engine) ReplaceUser(ctx context.Context, db, id string, body document.Value, ifMatch string) (*Resource, error) {
	newID, derr := userBodyID(body)
	if derr != nil {
		return nil, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, err
	}
	var u userRecord
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		d, old, err := e.loadUser(tx, db, id)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, old.Etag) {
			return preconditionFailed()
		}
		if newID != id {
			if found, err := getJSON(tx, userKey(d.Rid, newID), &userRecord{}); err != nil {
				return err
			} else if found {
				return conflict()
			}
			if err := tx.Delete(userKey(d.Rid, id)); err != nil {
				return err
			}
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		u = userRecord{ID: newID, Rid: old.Rid, Ts: now.Unix(), Etag: etagFor(old.Rid, n)}
		return setJSON(tx, userKey(d.Rid, newID), &u)
	})
	if err != nil {
		return nil, fmt.Errorf("replace user %q: %w", id, err)
	}
	return u.resource(), nil
}

// DeleteUser removes user id and its permissions, which revokes every
// resource token issued for them. ifMatch, when set and not "*", must be
// the user's etag.
func (e *Engine) DeleteUser(ctx context.Context, db, id, ifMatch string) error {
	err := e.store.Update(ctx, func(tx storage.Txn) error {
		d, u, err := e.loadUser(tx, db, id)
		if err != nil {
			return err
		}
		if staleMatch(ifMatch, u.Etag) {
			return preconditionFailed()
		}
		if err := deleteKeys(tx, permissionPrefix(u.Rid)); err != nil {
			return err
		}
		return tx.Delete(userKey(d.Rid, id))
	})
	if err != nil {
		return fmt.Errorf("delete user %q: %w", id, err)
	}
	return nil
}

// deleteUsers removes every user and permission of the database with rid
// dbRid, inside the transaction that deletes the database. A database
// holds few users, so this is one bounded write.
func deleteUsers(tx storage.Txn, dbRid []byte) error {
	if err := deleteKeys(tx, append([]byte{famPermission}, dbRid...)); err != nil {
		return err
	}
	return deleteKeys(tx, userPrefix(dbRid))
}

func deleteKeys(tx storage.Txn, prefix []byte) error {
	var keys [][]byte
	if err := scanPrefix(tx, prefix, func(k, _ []byte) (bool, error) {
		keys = append(keys, bytes.Clone(k))
		return true, nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := tx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// ListUsers returns the users of database db in id order, and the
// database's rid.
func (e *Engine) ListUsers(ctx context.Context, db string) ([]document.Value, string, error) {
	var out []document.Value
	var dbRid string
	err := e.store.View(ctx, func(r storage.Reader) error {
		d, err := e.loadDatabase(r, db)
		if err != nil {
			return err
		}
		dbRid = d.ridString()
		return scanPrefix(r, userPrefix(d.Rid), func(_, v []byte) (bool, error) {
			var u userRecord
			if err := unmarshalRecord(v, &u); err != nil {
				return false, err
			}
			out = append(out, u.resource().Body)
			return true, nil
		})
	})
	return out, dbRid, err
}

// PermissionParams is a create, replace or upsert of a permission.
type PermissionParams struct {
	DB, User string
	// ID is the addressed permission of a replace; a create or upsert
	// takes the body's id.
	ID      string
	Mode    WriteMode
	Body    document.Value
	IfMatch string
}

// WritePermission creates, replaces or upserts a permission of user
// p.User. It answers whether it created one.
func (e *Engine) WritePermission(ctx context.Context, p PermissionParams) (*Permission, bool, error) {
	rec, derr := parsePermission(p.DB, p.Body)
	if derr != nil {
		return nil, false, derr
	}
	now, err := e.Now(ctx)
	if err != nil {
		return nil, false, err
	}
	created := false
	err = e.store.Update(ctx, func(tx storage.Txn) error {
		created = false
		_, u, err := e.loadUser(tx, p.DB, p.User)
		if err != nil {
			return err
		}
		// A replace addresses the permission by its id; a new id in the
		// body renames it, as a replace of a user does.
		addressed := rec.ID
		if p.Mode == ModeReplace {
			addressed = p.ID
		}
		key := permissionKey(u.Rid, rec.ID)
		var old permissionRecord
		found, err := getJSON(tx, permissionKey(u.Rid, addressed), &old)
		if err != nil {
			return err
		}
		switch {
		case p.Mode == ModeCreate && found:
			return conflict()
		case p.Mode == ModeReplace && !found:
			return notFound()
		case found && staleMatch(p.IfMatch, old.Etag):
			return preconditionFailed()
		}
		if rec.Names, err = e.permissionNames(tx, p.DB, rec.Resource); err != nil {
			return err
		}
		if addressed != rec.ID {
			if taken, err := getJSON(tx, key, &permissionRecord{}); err != nil {
				return err
			} else if taken {
				return conflict()
			}
			if err := tx.Delete(permissionKey(u.Rid, addressed)); err != nil {
				return err
			}
		}
		// A user holds one permission per resource (409 otherwise).
		if err := scanPrefix(tx, permissionPrefix(u.Rid), func(_, v []byte) (bool, error) {
			var other permissionRecord
			if err := unmarshalRecord(v, &other); err != nil {
				return false, err
			}
			if other.ID != rec.ID && other.ID != addressed && other.granted() == rec.granted() {
				return false, errorf(Conflict, "User '%s' already has permission '%s' on resource '%s'.", p.User, other.ID, rec.Resource)
			}
			return true, nil
		}); err != nil {
			return err
		}
		n, err := nextCounter(tx, "rid")
		if err != nil {
			return err
		}
		rec.UserRid, rec.Ts = u.Rid, now.Unix()
		if found {
			rec.Rid = old.Rid
		} else {
			// A permission's rid is its user's 8 bytes and 8 more, as the
			// service makes it (DocumentDB-era clients parse rids by
			// length); one made before with 4 more keeps its rid.
			rec.Rid = binary.BigEndian.AppendUint64(bytes.Clone(u.Rid), n)
			created = true
		}
		rec.Etag = etagFor(rec.Rid, n)
		return setJSON(tx, key, rec)
	})
	if err != nil {
		return nil, false, fmt.Errorf("write permission %q: %w", rec.ID, err)
	}
	return rec.resource(), created, nil
}

// permissionNames resolves a permission's resource given as a rid-based
// link (a _self, as the DocumentDB-era SDKs give it) into the name-based
// link it grants; "" for a resource given by name. Either way the resource
// must be in database db.
func (e *Engine) permissionNames(r storage.Reader, db, resource string) (string, error) {
	segs := strings.Split(resource, "/")
	if segs[1] == db {
		return "", nil
	}
	names, _, found, err := e.namesOfRidLink(r, segs)
	if err != nil {
		return "", err
	}
	if !found || names[1] != db {
		return "", errorf(BadRequest, "The permission resource '%s' is not in database '%s'.", resource, db)
	}
	return strings.Join(names, "/"), nil
}

// parsePermission checks a permission body: an id, permissionMode Read or
// All, resource the link of a database (db itself), a container, an item
// or a script (stored procedure, trigger, UDF) in it, by name or by rid (permissionNames checks the latter), and an optional resourcePartitionKey (a JSON array, as
// the partition key header).
func parsePermission(db string, body document.Value) (*permissionRecord, *Error) {
	id, derr := userBodyID(body)
	if derr != nil {
		return nil, derr
	}
	rec := &permissionRecord{ID: id}
	switch m := body.Get("permissionMode"); {
	case m.Kind() == document.String && strings.EqualFold(m.Str(), PermissionRead):
		rec.Mode, rec.Written = PermissionRead, m.Str()
	case m.Kind() == document.String && strings.EqualFold(m.Str(), PermissionAll):
		rec.Mode, rec.Written = PermissionAll, m.Str()
	case !m.IsDefined():
		return nil, errorf(BadRequest, "The input content is invalid because the required properties - 'permissionMode; ' - are missing")
	default:
		return nil, errorf(BadRequest, "The permissionMode must be 'Read' or 'All'.")
	}
	res := body.Get("resource")
	if !res.IsDefined() {
		return nil, errorf(BadRequest, "The input content is invalid because the required properties - 'resource; ' - are missing")
	}
	link := strings.Trim(res.Str(), "/")
	segs := strings.Split(link, "/")
	valid := res.Kind() == document.String && len(segs)%2 == 0 && len(segs) <= 6 && segs[0] == "dbs"
	for i := 0; valid && i < len(segs); i++ {
		switch i {
		case 0, 2:
			valid = segs[i] == [...]string{"dbs", "", "colls"}[i]
		case 4:
			valid = segs[i] == "docs" || ScriptKind(segs[i]).known()
		default:
			valid = segs[i] != ""
		}
	}
	if !valid {
		return nil, errorf(BadRequest, "The permission resource '%s' is invalid: it must be the link of a database, container, item or script, such as dbs/{db}/colls/{container}.", res.Str())
	}
	if segs[1] != db && !IsDatabaseRid(segs[1]) {
		return nil, errorf(BadRequest, "The permission resource '%s' is not in database '%s'.", link, db)
	}
	rec.Resource = link
	if pk := body.Get("resourcePartitionKey"); pk.IsDefined() && !pk.IsNull() {
		if pk.Kind() != document.Array {
			return nil, errorf(BadRequest, "The resourcePartitionKey must be a JSON array of partition key values.")
		}
		raw := pk.JSON()
		if _, err := partition.ParseHeader(string(raw)); err != nil {
			return nil, errorf(BadRequest, "The resourcePartitionKey is invalid: %v", err)
		}
		if len(segs) < 4 {
			return nil, errorf(BadRequest, "A resourcePartitionKey needs a container or item resource.")
		}
		rec.PartitionKey = string(raw)
	}
	return rec, nil
}

// ReadPermission returns permission id of user of database db.
func (e *Engine) ReadPermission(ctx context.Context, db, user, id string) (*Permission, error) {
	var rec permissionRecord
	err := e.store.View(ctx, func(r storage.Reader) error {
		_, u, err := e.loadUser(r, db, user)
		if err != nil {
			return err
		}
		found, err := getJSON(r, permissionKey(u.Rid, id), &rec)
		if err != nil {
			return err
		}
		if !found {
			return errorf(NotFound, "Resource Not Found. Permission '%s' does not exist for user '%s'.", id, user)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rec.resource(), nil
}

// DeletePermission removes a permission, revoking its tokens. ifMatch,
// when set and not "*", must be the permission's etag.
func (e *Engine) DeletePermission(ctx context.Context, db, user, id, ifMatch string) error {
	return e.store.Update(ctx, func(tx storage.Txn) error {
		_, u, err := e.loadUser(tx, db, user)
		if err != nil {
			return err
		}
		key := permissionKey(u.Rid, id)
		var rec permissionRecord
		if found, err := getJSON(tx, key, &rec); err != nil {
			return err
		} else if !found {
			return errorf(NotFound, "Resource Not Found. Permission '%s' does not exist for user '%s'.", id, user)
		}
		if staleMatch(ifMatch, rec.Etag) {
			return preconditionFailed()
		}
		return tx.Delete(key)
	})
}

// ListPermissions returns the permissions of a user in id order, and the
// user's rid.
func (e *Engine) ListPermissions(ctx context.Context, db, user string) ([]*Permission, string, error) {
	var out []*Permission
	var userRid string
	err := e.store.View(ctx, func(r storage.Reader) error {
		out = nil
		_, u, err := e.loadUser(r, db, user)
		if err != nil {
			return err
		}
		userRid = ridString(u.Rid)
		return scanPrefix(r, permissionPrefix(u.Rid), func(_, v []byte) (bool, error) {
			var p permissionRecord
			if err := unmarshalRecord(v, &p); err != nil {
				return false, err
			}
			out = append(out, p.resource())
			return true, nil
		})
	})
	return out, userRid, err
}

// LookupPermission returns the permission a resource token names, or
// NotFound when it no longer exists or has changed since the token was
// issued (ref.Etag differs).
func (e *Engine) LookupPermission(ctx context.Context, ref PermissionRef) (*Permission, error) {
	userRid, ok := parseRid(ref.UserRid)
	if !ok || len(userRid) != 8 {
		return nil, errorf(NotFound, "The permission of the resource token does not exist.")
	}
	var rec permissionRecord
	var found bool
	var itemKey []byte
	err := e.store.View(ctx, func(r storage.Reader) error {
		var err error
		found, err = getJSON(r, permissionKey(userRid, ref.ID), &rec)
		if err != nil || !found || rec.Etag != ref.Etag || rec.Names == "" {
			return err
		}
		// A permission given by rid grants the resource with that rid,
		// not whatever now has its name: a container deleted and made
		// again, or an item of the same id in another partition.
		names, key, resolved, err := e.namesOfRidLink(r, strings.Split(rec.Resource, "/"))
		if isNotFound(err) || err == nil && (!resolved || strings.Join(names, "/") != rec.Names) {
			found = false
			return nil
		}
		itemKey = key
		return err
	})
	if err != nil {
		return nil, err
	}
	if !found || rec.Etag != ref.Etag {
		return nil, errorf(NotFound, "The permission of the resource token does not exist.")
	}
	p := rec.resource()
	if itemKey != nil && !p.Grant.HasKey {
		k, err := decodeKeyBytes(itemKey)
		if err != nil {
			return nil, fmt.Errorf("the partition key of permission %s's item: %w", ref.ID, err)
		}
		p.Grant.PartitionKey, p.Grant.HasKey = k, true
	}
	return p, nil
}
