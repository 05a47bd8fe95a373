package httpapi

import (
	"mime"
	"net/http"

	"github.com/mayfly-db/mayfly/internal/engine"
)

// routeAttachments serves …/docs/{item}/attachments[/{id}]: attachment
// metadata with a media link. Uploading media itself (a body that is not
// JSON) is refused, as the service refuses it since it stopped storing
// attachment media.
func (h *Handler) routeAttachments(rq *request, db, coll, item string, s []string) {
	ref, err := itemRef(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	aref := engine.AttachmentRef{ItemRef: ref, ItemID: item}
	ctx := rq.r.Context()
	m := rq.r.Method
	if len(s) > 1 {
		h.fail(rq, &engine.Error{Code: engine.NotFound, Message: "The requested resource does not exist."})
		return
	}
	if (m == http.MethodPost || m == http.MethodPut) && !isQuery(rq.r) && !jsonBody(rq.r) {
		h.fail(rq, badRequest("Attachment media uploads are not supported; create the attachment with a JSON body whose 'media' property links to the content."))
		return
	}
	switch {
	case len(s) == 0 && m == http.MethodPost && isQuery(rq.r):
		h.queryResourcesOf(rq, engine.ResourceQueryParams{Kind: engine.ResourceAttachments, Item: aref})
	case len(s) == 0 && m == http.MethodPost:
		body, err := h.readJSON(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		res, created, err := h.eng.CreateAttachment(ctx, aref, body, headerBool(rq.r, "x-ms-documentdb-is-upsert"))
		if err != nil {
			h.fail(rq, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		h.resourceReply(rq, status, res)
	case len(s) == 0 && m == http.MethodGet:
		vals, itemRid, err := h.eng.ListAttachments(ctx, aref)
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.listReply(rq, itemRid, "Attachments", valuesJSON(vals))
	case len(s) == 1 && m == http.MethodGet:
		res, err := h.eng.ReadAttachment(ctx, aref, s[0])
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.resourceReply(rq, http.StatusOK, res)
	case len(s) == 1 && m == http.MethodPut:
		body, err := h.readJSON(rq)
		if err != nil {
			h.fail(rq, err)
			return
		}
		res, err := h.eng.ReplaceAttachment(ctx, aref, s[0], body, rq.r.Header.Get("If-Match"))
		if err != nil {
			h.fail(rq, err)
			return
		}
		h.resourceReply(rq, http.StatusOK, res)
	case len(s) == 1 && m == http.MethodDelete:
		if err := h.eng.DeleteAttachment(ctx, aref, s[0], rq.r.Header.Get("If-Match")); err != nil {
			h.fail(rq, err)
			return
		}
		h.reply(rq, http.StatusNoContent, engine.MetadataCharge, nil)
	default:
		h.methodNotAllowed(rq)
	}
}

// jsonBody reports whether the request body is JSON (or untyped).
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || mt == "application/query+json")
}
