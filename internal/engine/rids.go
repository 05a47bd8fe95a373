package engine

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"

	"github.com/mayfly-db/mayfly/internal/storage"
)

// Resources can be addressed by their _rid as well as by name
// (docs/protocol.md §2.1): dbs/{dbRid}/colls/{collRid}/docs/{docRid},
// …/colls/{collRid}/sprocs/{sprocRid} (and triggers, udfs) and
// dbs/{dbRid}/users/{userRid}/permissions/{permRid}, the _self link each
// resource returns. A rid encodes its parents: a
// container's rid is its database's 4 bytes and 4 of its own, an item's is
// its container's 8 and the 8-byte sequence number of its _rid order. The
// service does not mix the two forms in one link.

// Lengths of the binary rids of each level.
const (
	dbRidLen         = 4
	collRidLen       = 8
	itemRidLen       = 16
	attachmentRidLen = 20
)

// containerRid is the rid of a container made as the n-th rid, under the
// database with rid dbRid. As in the service, the high bit of its fifth
// byte is set: it tells a container's rid from a user's (whose fifth byte
// has it clear) in the DocumentDB-era SDKs, which parse the rid of every
// link they address to file session tokens by container, and read every
// rid under a container in the service's layout (itemRid).
func containerRid(dbRid []byte, n uint64) []byte {
	rid := binary.BigEndian.AppendUint32(bytes.Clone(dbRid), uint32(n))
	rid[dbRidLen] |= 0x80
	return rid
}

// serviceLayout reports whether a container's rid is of the service's
// layout (containerRid); rids of containers made before it are not, and
// their items keep the big-endian rids they were given.
func serviceLayout(collRid []byte) bool {
	return len(collRid) == collRidLen && collRid[dbRidLen]&0x80 != 0
}

// itemRid is the rid of the item with sequence number seq in the container
// with rid collRid: the container's 8 bytes and 8 more. In the service's
// layout these are a little-endian number whose last byte's high nibble,
// the type of what lives under a container, is 0 for a document (scripts
// use others, scriptRid); sequence numbers stay below 2^56. Otherwise they
// are the big-endian sequence number.
func itemRid(collRid []byte, seq uint64) []byte {
	if serviceLayout(collRid) {
		return binary.LittleEndian.AppendUint64(bytes.Clone(collRid), seq&(1<<56-1))
	}
	return binary.BigEndian.AppendUint64(bytes.Clone(collRid), seq)
}

// itemSeq is the sequence number an item rid (itemRidLen bytes, under
// collRid) encodes.
func itemSeq(collRid, rid []byte) uint64 {
	if serviceLayout(collRid) {
		return binary.LittleEndian.Uint64(rid[collRidLen:])
	}
	return binary.BigEndian.Uint64(rid[collRidLen:])
}

// parseRid decodes a rid segment (base64 with '-' for '/'); ok is false
// when it is not one.
func parseRid(s string) ([]byte, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(s, "-", "/"))
	return b, err == nil
}

// IsDatabaseRid reports whether id has the shape of a database's rid, so
// that a link starting dbs/{id} may be addressed by rid.
func IsDatabaseRid(id string) bool {
	b, ok := parseRid(id)
	return ok && len(b) == dbRidLen
}

// errMixedLink is the service's answer to a link that names some
// resources by rid and others by id.
func errMixedLink(seg string) *Error {
	return errorf(BadRequest, "The resource link mixes resource ids and names: '%s' is not the resource id of a resource under the one before it. Address every resource of a link by its id or every one by its _rid.", seg)
}

// ResolveRidLink turns the segments of a link addressed by rid
// ("dbs", dbRid, "colls", collRid, "docs", docRid, "attachments", attRid,
// or "sprocs", sprocRid and the like after collRid, or "users", userRid,
// "permissions", permRid after dbRid; or a prefix of one of those, possibly
// ending in a type) into the same link addressed by name. found
// is false when segs[1] is no database's rid, so the link is a name-based
// one that merely looks like a rid. Any other segment that is not the rid
// of a resource under the one before it is a 400 (mixed addressing) or a
// 404.
func (e *Engine) ResolveRidLink(ctx context.Context, segs []string) (names []string, found bool, err error) {
	if len(segs) < 2 || segs[0] != "dbs" || !IsDatabaseRid(segs[1]) {
		return nil, false, nil
	}
	err = e.store.View(ctx, func(r storage.Reader) error {
		names, _, found, err = e.namesOfRidLink(r, segs)
		return err
	})
	if err != nil || !found {
		return nil, found, err
	}
	return names, true, nil
}

// namesOfRidLink is ResolveRidLink in a read the caller holds.
// itemKey is the partition key bytes of the item a link to an item (or
// to one of its attachments) names.
func (e *Engine) namesOfRidLink(r storage.Reader, segs []string) (names []string, itemKey []byte, found bool, err error) {
	if len(segs) < 2 || segs[0] != "dbs" || !IsDatabaseRid(segs[1]) {
		return nil, nil, false, nil
	}
	names = append([]string(nil), segs...)
	err = func() error {
		dbRid, _ := parseRid(segs[1])
		d, err := e.databaseByRid(r, dbRid)
		if err != nil || d == nil {
			return err
		}
		found = true
		names[1] = d.ID
		if len(segs) < 4 {
			return nil
		}
		if segs[2] == "users" {
			return resolveUserRids(r, d, segs, names)
		}
		if segs[2] != "colls" {
			return errorf(BadRequest, "Resources of type '%s' cannot be addressed by resource id.", segs[2])
		}
		collRid, ok := parseRid(segs[3])
		if !ok || len(collRid) != collRidLen || string(collRid[:dbRidLen]) != string(dbRid) {
			return errMixedLink(segs[3])
		}
		c, err := e.containerByRid(r, d, collRid)
		if err != nil {
			return err
		}
		names[3] = c.ID
		if len(segs) < 6 {
			return nil
		}
		if kind := ScriptKind(segs[4]); kind.known() {
			if len(segs) > 6 {
				return errorf(BadRequest, "Resources of type '%s' cannot be addressed by resource id.", segs[6])
			}
			names[5], err = scriptIDByRid(r, c, kind, segs[5])
			return err
		}
		if segs[4] != "docs" {
			return errorf(BadRequest, "Resources of type '%s' cannot be addressed by resource id.", segs[4])
		}
		itemRid, ok := parseRid(segs[5])
		if !ok || len(itemRid) != itemRidLen || string(itemRid[:collRidLen]) != string(collRid) {
			return errMixedLink(segs[5])
		}
		rec, err := itemByRid(r, c, itemSeq(c.Rid, itemRid))
		if err != nil {
			return err
		}
		names[5], itemKey = rec.id, rec.pk
		if len(segs) < 8 {
			return nil
		}
		if segs[6] != "attachments" {
			return errorf(BadRequest, "Resources of type '%s' cannot be addressed by resource id.", segs[6])
		}
		attRid, ok := parseRid(segs[7])
		if !ok || len(attRid) != attachmentRidLen || string(attRid[:itemRidLen]) != string(itemRid) {
			return errMixedLink(segs[7])
		}
		names[7], err = attachmentIDByRid(r, c, &rec, segs[7])
		return err
	}()
	if err != nil || !found {
		return nil, nil, found, err
	}
	return names, itemKey, true, nil
}

// databaseByRid finds the database with the rid, or nil. Databases are
// few; the name a rid was last seen under is tried first.
func (e *Engine) databaseByRid(r storage.Reader, rid []byte) (*databaseRecord, error) {
	e.mu.Lock()
	name, ok := e.ridNames[string(rid)]
	e.mu.Unlock()
	if ok {
		d, err := e.loadDatabase(r, name)
		if err == nil && string(d.Rid) == string(rid) {
			return d, nil
		}
		if err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	var found *databaseRecord
	err := scanPrefix(r, []byte{famDatabase}, func(_, v []byte) (bool, error) {
		var rec databaseRecord
		if err := unmarshalRecord(v, &rec); err != nil {
			return false, err
		}
		if string(rec.Rid) == string(rid) {
			found = &rec
			return false, nil
		}
		return true, nil
	})
	if found != nil {
		e.rememberRid(rid, found.ID)
	}
	return found, err
}

// containerByRid finds the container of d with the rid, or a 404.
func (e *Engine) containerByRid(r storage.Reader, d *databaseRecord, rid []byte) (*containerRecord, error) {
	e.mu.Lock()
	name, ok := e.ridNames[string(rid)]
	e.mu.Unlock()
	if ok {
		c, err := e.loadContainer(r, d.ID, name)
		if err == nil && string(c.Rid) == string(rid) {
			return c, nil
		}
		if err != nil && !isNotFound(err) {
			return nil, err
		}
	}
	var found *containerRecord
	err := scanPrefix(r, containerPrefix(d.Rid), func(_, v []byte) (bool, error) {
		c, err := decodeContainer(v)
		if err != nil {
			return false, err
		}
		if string(c.Rid) == string(rid) {
			found = c
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, errorf(NotFound, "Resource Not Found. No container with resource id '%s' in database '%s'.", ridString(rid), d.ID)
	}
	e.rememberRid(rid, found.ID)
	return found, nil
}

// rememberRid notes the name a rid was found under; a hint, checked on use.
func (e *Engine) rememberRid(rid []byte, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.ridNames) >= maxRidNames {
		clear(e.ridNames)
	}
	e.ridNames[string(rid)] = name
}

// maxRidNames bounds the rid hints kept in memory.
const maxRidNames = 4096

// itemByRid finds the record of the item with the sequence number, through
// the _rid-order entry that points at its location: two point reads.
func itemByRid(r storage.Reader, c *containerRecord, seq uint64) (itemRecord, error) {
	notFound := errorf(NotFound, "Entity with the specified id does not exist in the system.")
	loc, err := r.Get(byRidKey(c.Rid, seq))
	if errors.Is(err, storage.ErrNotFound) {
		return itemRecord{}, notFound
	}
	if err != nil {
		return itemRecord{}, err
	}
	rec, ok, err := readItemAt(r, c, loc, &readStats{})
	if err != nil {
		return itemRecord{}, err
	}
	if !ok {
		return itemRecord{}, notFound
	}
	rec.detach()
	return rec, nil
}

// attachmentIDByRid finds the id of the item's attachment with the rid
// among the item's attachments.
func attachmentIDByRid(r storage.Reader, c *containerRecord, item *itemRecord, rid string) (string, error) {
	prefix := attachmentPrefix(c.Rid, item.pk, item.id)
	id := ""
	err := scanPrefix(r, prefix, func(k, v []byte) (bool, error) {
		var a attachmentRecord
		if err := json.Unmarshal(v, &a); err != nil {
			return false, err
		}
		if a.Rid == rid {
			id = string(k[len(prefix):])
			return false, nil
		}
		return true, nil
	})
	if err == nil && id == "" {
		err = errorf(NotFound, "Resource Not Found. No attachment with resource id '%s'.", rid)
	}
	return id, err
}

// resolveUserRids resolves the rest of a link under database d that
// continues users/{userRid}[/permissions/{permRid}] into names.
func resolveUserRids(r storage.Reader, d *databaseRecord, segs, names []string) error {
	userRid, ok := parseRid(segs[3])
	if !ok || len(userRid) != collRidLen || string(userRid[:dbRidLen]) != string(d.Rid) {
		return errMixedLink(segs[3])
	}
	user, err := idByRid(r, userPrefix(d.Rid), userRid)
	if err != nil {
		return err
	}
	if user == "" {
		return errorf(NotFound, "Resource Not Found. No user with resource id '%s' in database '%s'.", segs[3], d.ID)
	}
	names[3] = user
	if len(segs) < 6 {
		return nil
	}
	if segs[4] != "permissions" || len(segs) > 6 {
		return errorf(BadRequest, "Resources of type '%s' cannot be addressed by resource id.", segs[4])
	}
	permRid, ok := parseRid(segs[5])
	if !ok || len(permRid) <= len(userRid) || string(permRid[:len(userRid)]) != string(userRid) {
		return errMixedLink(segs[5])
	}
	names[5], err = idByRid(r, permissionPrefix(userRid), permRid)
	if err == nil && names[5] == "" {
		err = errorf(NotFound, "Resource Not Found. No permission with resource id '%s' for user '%s'.", segs[5], user)
	}
	return err
}

// scriptIDByRid finds the id of the container's script of the kind with
// the rid.
func scriptIDByRid(r storage.Reader, c *containerRecord, kind ScriptKind, seg string) (string, error) {
	rid, ok := parseRid(seg)
	if !ok || len(rid) <= collRidLen || string(rid[:collRidLen]) != string(c.Rid) {
		return "", errMixedLink(seg)
	}
	id, err := idByRid(r, scriptPrefix(c.Rid, kind), rid)
	if err == nil && id == "" {
		err = errorf(NotFound, "Resource Not Found. No %s with resource id '%s' in container '%s'.", strings.ToLower(kind.noun()), seg, c.ID)
	}
	return id, err
}

// idByRid finds, among the metadata records under prefix (users,
// permissions or scripts, of which a parent holds few), the id of the one
// whose rid is rid; "" when none is.
func idByRid(r storage.Reader, prefix, rid []byte) (string, error) {
	id := ""
	err := scanPrefix(r, prefix, func(_, v []byte) (bool, error) {
		var rec struct {
			ID  string `json:"id"`
			Rid []byte `json:"rid"`
		}
		if err := unmarshalRecord(v, &rec); err != nil {
			return false, err
		}
		if string(rec.Rid) == string(rid) {
			id = rec.ID
			return false, nil
		}
		return true, nil
	})
	return id, err
}
