package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/auth"
	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
	"github.com/mayfly-db/mayfly/internal/partition"
)

// tokenIssuer makes resource tokens (*auth.Verifier).
type tokenIssuer interface {
	IssueResourceToken(c auth.TokenClaims) string
	TokenNow() time.Time
}

// permissionLookup finds the permission a resource token names
// (*engine.Engine).
type permissionLookup interface {
	LookupPermission(ctx context.Context, ref engine.PermissionRef) (*engine.Permission, error)
}

var (
	_ tokenIssuer      = (*auth.Verifier)(nil)
	_ permissionLookup = (*engine.Engine)(nil)
)

// tokenLifetime reads x-ms-documentdb-expiry-seconds: how long the
// resource tokens of a permission response stay valid (default one hour,
// 10 s to 5 h).
func tokenLifetime(r *http.Request) (time.Duration, error) {
	v := strings.TrimSpace(r.Header.Get("x-ms-documentdb-expiry-seconds"))
	if v == "" {
		return auth.DefaultTokenLifetime, nil
	}
	n, err := strconv.Atoi(v)
	if d := time.Duration(n) * time.Second; err != nil || d < auth.MinTokenLifetime || d > auth.MaxTokenLifetime {
		return 0, badRequest("Invalid value '%s' for header x-ms-documentdb-expiry-seconds: it must be between %d and %d seconds.",
			v, int(auth.MinTokenLifetime.Seconds()), int(auth.MaxTokenLifetime.Seconds()))
	}
	return time.Duration(n) * time.Second, nil
}

// withToken adds a fresh resource token to a permission as `_token`, for
// a request the read-write key signed: a token is signed with that key,
// and one of mode All writes, so a reader with the read-only key (or an
// Entra ID token) reads the permission without one.
func (h *Handler) withToken(rq *request, p *engine.Permission) (*engine.Resource, error) {
	ti, ok := h.auth.(tokenIssuer)
	if !ok || !rq.owner {
		return &p.Resource, nil
	}
	life, err := tokenLifetime(rq.r)
	if err != nil {
		return nil, err
	}
	tok := ti.IssueResourceToken(auth.TokenClaims{UserRid: p.Ref.UserRid, PermID: p.Ref.ID, Etag: p.Ref.Etag,
		Expiry: ti.TokenNow().Add(life).Unix()})
	res := p.Resource
	res.Body = res.Body.With("_token", document.Str(tok))
	return &res, nil
}

// grantOf returns the grant of the permission a resource token names, or
// the refusal of a token whose permission is gone or changed.
func (h *Handler) grantOf(rq *request, c *auth.TokenClaims) (*engine.Grant, error) {
	pl, ok := h.eng.(permissionLookup)
	if !ok {
		return nil, auth.Revoked()
	}
	p, err := pl.LookupPermission(rq.r.Context(), engine.PermissionRef{UserRid: c.UserRid, ID: c.PermID, Etag: c.Etag})
	if err != nil {
		if engine.ErrorCode(err) == engine.NotFound {
			return nil, auth.Revoked()
		}
		return nil, err
	}
	return &p.Grant, nil
}

// authorizeGrant checks a request made with a resource token against its
// grant, before routing:
//   - the account (GET /) may always be read: the SDKs read it first;
//   - within the granted resource, reads of anything, and with mode All
//     writes of items (the docs feed and below) and of the container's
//     scripts, and executions of its stored procedures; no token manages
//     databases, containers, offers, users or permissions;
//   - outside it, only single reads of the database and container that hold
//     it, and that container's partition key ranges, which the SDKs need to
//     address items;
//   - with a resourcePartitionKey, every request on items (point, feed,
//     query, change feed, batch) and every execution of a stored procedure
//     must carry that partition key, and scripts are not written: they run
//     in every partition.
func authorizeGrant(rq *request, g *engine.Grant) error {
	s := rq.path.segs
	m := rq.r.Method
	if len(s) == 0 {
		if m == http.MethodGet {
			return nil
		}
		return auth.Forbidden()
	}
	// Only databases, containers and what containers hold: not offers,
	// users or permissions (an item may still be called "users").
	if s[0] != "dbs" || (len(s) >= 3 && s[2] != "colls") {
		return auth.Forbidden()
	}
	write := m != http.MethodGet && m != http.MethodHead && !queryRequest(rq.r, s)
	within := len(s) >= len(g.Link) && equalSegs(s[:len(g.Link)], g.Link)
	onItems := len(s) >= 5 && s[4] == "docs" || len(s) == 6 && s[4] == "operations" // a delete by partition key
	onScripts := len(s) >= 5 && (s[4] == "sprocs" || s[4] == "triggers" || s[4] == "udfs")
	execute := len(s) == 6 && s[4] == "sprocs" && m == http.MethodPost
	switch {
	case within && write && (g.Mode != engine.PermissionAll || !onItems && !onScripts):
		return auth.Forbidden()
	case within:
	case write:
		return auth.Forbidden()
	case len(s)%2 == 0 && len(s) < len(g.Link) && equalSegs(s, g.Link[:len(s)]):
		return nil // an ancestor's own record
	case len(s) == 5 && s[4] == "pkranges" && len(g.Link) >= 4 && equalSegs(s[:4], g.Link[:4]):
		return nil
	default:
		return auth.Forbidden()
	}
	if g.HasKey && onScripts && write && !execute {
		return auth.Forbidden()
	}
	if g.HasKey && (onItems || execute) {
		hv := rq.r.Header.Get("x-ms-documentdb-partitionkey")
		k, err := partition.ParseHeader(hv)
		if hv == "" || err != nil || !k.Equal(g.PartitionKey) {
			return auth.Forbidden()
		}
	}
	return nil
}

// authorizeAAD checks a request made with an Entra ID token: as in the
// service's role-based access, it may read anything and work with items
// (writes, queries, batches, a partition's deletion) and execute stored
// procedures, but manages nothing: no database, container, throughput,
// script, user or permission is written with it.
func authorizeAAD(rq *request) error {
	s := rq.path.segs
	m := rq.r.Method
	if m == http.MethodGet || m == http.MethodHead || queryRequest(rq.r, s) {
		return nil
	}
	inColl := len(s) >= 5 && s[0] == "dbs" && s[2] == "colls"
	switch {
	case inColl && s[4] == "docs",
		inColl && len(s) == 6 && s[4] == "operations",
		inColl && len(s) == 6 && s[4] == "sprocs" && m == http.MethodPost:
		return nil
	}
	return auth.AADMetadataForbidden("localhost", m, rq.r.URL.Path)
}

// authorizeBatch checks each operation of a batch against the grant the
// request was made with (nil: a master key): a Read grant allows only
// reads, an item grant only that item, a partition grant only that key.
func authorizeBatch(g *engine.Grant, ops []engine.BatchOp) error {
	if g == nil {
		return nil
	}
	for _, op := range ops {
		if op.Type != engine.BatchRead && g.Mode != engine.PermissionAll {
			return auth.Forbidden()
		}
		if len(g.Link) == 6 {
			id := op.ID
			if id == "" {
				id = op.Body.Get("id").Str()
			}
			if id != g.Link[5] {
				return auth.Forbidden()
			}
		}
		if g.HasKey && op.HasKey && !op.PartitionKey.Equal(g.PartitionKey) {
			return auth.Forbidden()
		}
	}
	return nil
}

func equalSegs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
