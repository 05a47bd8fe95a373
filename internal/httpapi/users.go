package httpapi

import (
	"context"
	"net/http"

	"github.com/mayfly-db/mayfly/internal/document"
	"github.com/mayfly-db/mayfly/internal/engine"
)

// userStore is the engine's users and permissions capability.
type userStore interface {
	CreateUser(ctx context.Context, db string, body document.Value) (*engine.Resource, error)
	UpsertUser(ctx context.Context, db string, body document.Value) (*engine.Resource, bool, error)
	ReadUser(ctx context.Context, db, id string) (*engine.Resource, error)
	ReplaceUser(ctx context.Context, db, id string, body document.Value, ifMatch string) (*engine.Resource, error)
	DeleteUser(ctx context.Context, db, id, ifMatch string) error
	ListUsers(ctx context.Context, db string) ([]document.Value, string, error)

	WritePermission(ctx context.Context, p engine.PermissionParams) (*engine.Permission, bool, error)
	ReadPermission(ctx context.Context, db, user, id string) (*engine.Permission, error)
	DeletePermission(ctx context.Context, db, user, id, ifMatch string) error
	ListPermissions(ctx context.Context, db, user string) ([]*engine.Permission, string, error)
}

var _ userStore = (*engine.Engine)(nil)

// routeUsers serves /dbs/{db}/users/… ; s is what follows "users".
func (h *Handler) routeUsers(rq *request, db string, s []string) {
	us, ok := h.eng.(userStore)
	if !ok {
		h.unsupportedFeed(rq, s, "Users")
		return
	}
	ctx := rq.r.Context()
	m := rq.r.Method
	switch {
	case len(s) == 0 && m == http.MethodPost && isQuery(rq.r):
		h.queryResourcesOf(rq, engine.ResourceQueryParams{Kind: engine.ResourceUsers, DB: db})
	case len(s) == 0 && m == http.MethodPost:
		body, err := h.readJSON(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		var res *engine.Resource
		created := true
		if headerBool(rq.r, "x-ms-documentdb-is-upsert") {
			res, created, err = us.UpsertUser(ctx, db, body)
		} else {
			res, err = us.CreateUser(ctx, db, body)
		}
		h.answer(rq, createdStatus(created), res, err)
	case len(s) == 0 && m == http.MethodGet:
		users, rid, err := us.ListUsers(ctx, db)
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.listReply(rq, rid, "Users", valuesJSON(users))
	case len(s) == 1 && m == http.MethodGet:
		res, err := us.ReadUser(ctx, db, s[0])
		h.answer(rq, http.StatusOK, res, err)
	case len(s) == 1 && m == http.MethodPut:
		body, err := h.readJSON(rq)
		var res *engine.Resource
		if err == nil {
			res, err = us.ReplaceUser(ctx, db, s[0], body, rq.r.Header.Get("If-Match"))
		}
		h.answer(rq, http.StatusOK, res, err)
	case len(s) == 1 && m == http.MethodDelete:
		if err := us.DeleteUser(ctx, db, s[0], rq.r.Header.Get("If-Match")); err != nil {
			h.fail(rq, err)
			return
		}
		h.reply(rq, http.StatusNoContent, 0, nil)
	case len(s) >= 2 && s[1] == "permissions":
		h.routePermissions(rq, us, db, s[0], s[2:])
	case len(s) >= 2:
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "Unknown resource type '" + s[1] + "'."})
	default:
		h.methodNotAllowed(rq)
	}
}

// createdStatus is the status of a write that created a resource (201) or
// replaced one (an upsert's 200).
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func (h *Handler) answer(rq *request, status int, res *engine.Resource, err error) {
	if err != nil {
		h.fail(rq, err)
		return
	}
	h.resourceReply(rq, status, res)
}

// routePermissions serves /dbs/{db}/users/{user}/permissions/…
func (h *Handler) routePermissions(rq *request, us userStore, db, user string, s []string) {
	ctx := rq.r.Context()
	m := rq.r.Method
	if _, err := tokenLifetime(rq.r); err != nil && m != http.MethodDelete {
		h.fail(rq, err)
		return
	}
	write := func(mode engine.WriteMode, id string) {
		body, err := h.readJSON(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		p, created, err := us.WritePermission(ctx, engine.PermissionParams{DB: db, User: user, ID: id, Mode: mode,
			Body: body, IfMatch: rq.r.Header.Get("If-Match")})
		if err != nil {
			h.fail(rq, err)
			return
		}
		res, err := h.withToken(rq, p)
		h.answer(rq, createdStatus(created), res, err)
	}
	switch {
	case len(s) == 0 && m == http.MethodPost && isQuery(rq.r):
		h.queryResourcesOf(rq, engine.ResourceQueryParams{Kind: engine.ResourcePermissions, DB: db, User: user})
	case len(s) == 0 && m == http.MethodPost:
		mode := engine.ModeCreate
		if headerBool(rq.r, "x-ms-documentdb-is-upsert") {
			mode = engine.ModeUpsert
		}
		write(mode, "")
	case len(s) == 0 && m == http.MethodGet:
		perms, rid, err := us.ListPermissions(ctx, db, user)
		if err != nil {
			h.fail(rq, err)
			return
		}
		items := make([][]byte, len(perms))
		for i, p := range perms {
			res, err := h.withToken(rq, p)
			if err != nil {
				h.fail(rq, err)
				return
			}
			items[i] = res.Body.JSON()
		}
		h.listReply(rq, rid, "Permissions", items)
	case len(s) == 1 && m == http.MethodGet:
		p, err := us.ReadPermission(ctx, db, user, s[0])
		var res *engine.Resource
		if err == nil {
			res, err = h.withToken(rq, p)
		}
		h.answer(rq, http.StatusOK, res, err)
	case len(s) == 1 && m == http.MethodPut:
		write(engine.ModeReplace, s[0])
	case len(s) == 1 && m == http.MethodDelete:
		if err := us.DeletePermission(ctx, db, user, s[0], rq.r.Header.Get("If-Match")); err != nil {
			h.fail(rq, err)
			return
		}
		h.reply(rq, http.StatusNoContent, 0, nil)
	case len(s) > 1:
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "The requested resource does not exist."})
	default:
		h.methodNotAllowed(rq)
	}
}
