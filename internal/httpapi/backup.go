package httpapi

import (
	"encoding/json"
	"net/http"
	"path/filepath"

	"github.com/mayfly-db/mayfly/internal/engine"
)

// backupRequest is the body of POST /_mayfly/backup.
type backupRequest struct {
	// To is a directory on the server's machine that does not exist yet.
	To string `json:"to"`
}

// runBackup writes a consistent copy of the data into the directory the
// body names (mayfly backup). Only the read-write account key may ask: a
// backup holds every item of every database.
func (h *Handler) runBackup(rq *request) {
	if !rq.owner {
		h.fail(rq, &engine.Error{Code: engine.Forbidden, Message: "Only the read-write account key may back up the account."})
		return
	}
	if h.backup == nil {
		h.fail(rq, &engine.Error{Code: engine.BadRequest, Message: "A server started with --in-memory keeps nothing to back up."})
		return
	}
	body, err := h.readBody(rq)
	if err != nil {
		h.fail(rq, err)
		return
	}
	var req backupRequest
	if err := json.Unmarshal(body, &req); err != nil || req.To == "" {
		h.fail(rq, &engine.Error{Code: engine.BadRequest, Message: `The request body must be {"to": "<directory>"}, a directory on the server's machine that does not exist yet.`})
		return
	}
	if !filepath.IsAbs(req.To) {
		h.fail(rq, &engine.Error{Code: engine.BadRequest, Message: "The backup directory must be an absolute path: " + req.To})
		return
	}
	if err := h.backup(rq.r.Context(), req.To); err != nil {
		h.fail(rq, &engine.Error{Code: engine.BadRequest, Message: "The backup failed: " + err.Error()})
		return
	}
	out, _ := json.Marshal(map[string]string{"to": req.To})
	h.reply(rq, http.StatusOK, 0, out)
}
