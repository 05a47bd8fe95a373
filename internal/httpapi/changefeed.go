package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mayfly-db/mayfly/internal/engine"
)

// changeFeeder is the change feed, an optional capability of the engine in
// the manner of database/sql/driver: without it, change feed requests are
// refused as unsupported.
type changeFeeder interface {
	ChangeFeed(ctx context.Context, p engine.ChangeFeedParams) (*engine.ChangeFeedPage, error)
}

var _ changeFeeder = (*engine.Engine)(nil)

// The A-IM values and the one all-versions wire format (docs/protocol.md §8).
const (
	aimLatestVersion   = "Incremental Feed"
	aimAllVersions     = "Full-Fidelity Feed"
	wireFormatHeader   = "x-ms-cosmos-changefeed-wire-format-version"
	wireFormat20210915 = "2021-09-15"
)

// changeFeed serves GET …/docs with A-IM: one page of the change feed, or
// 304 when there is nothing new. The etag is the continuation: the client
// sends it back in If-None-Match.
func (h *Handler) changeFeed(rq *request, db, coll string) {
	cf, ok := h.eng.(changeFeeder)
	if !ok {
		h.fail(rq, badRequest("The change feed is not supported yet."))
		return
	}
	p, err := changeFeedParams(rq.r, db, coll)
	if err != nil {
		h.fail(rq, err)
		return
	}
	page, err := cf.ChangeFeed(rq.r.Context(), p)
	if err != nil {
		h.fail(rq, err)
		return
	}
	hd := rq.w.Header()
	setHeader(hd, "etag", `"`+page.Position.String()+`"`)
	setHeader(hd, "x-ms-session-token", engine.SessionToken(page.CurrentLSN))
	setHeader(hd, "lsn", strconv.FormatUint(page.CurrentLSN, 10))
	setHeader(hd, "x-ms-documentdb-partitionkeyrangeid", engine.SessionRange(page.CurrentLSN))
	setHeader(hd, "x-ms-item-count", strconv.Itoa(len(page.Items)))
	if page.CollRid != "" {
		setHeader(hd, "x-ms-content-path", page.CollRid)
	}
	if len(page.Items) == 0 {
		h.notModified(rq, page.Charge)
		return
	}
	h.replyPage(rq, page.Charge, page.CollRid, "Documents", page.Items)
}

// changeFeedParams reads a change feed request's headers.
func changeFeedParams(r *http.Request, db, coll string) (engine.ChangeFeedParams, error) {
	var p engine.ChangeFeedParams
	ref, err := itemRef(r, db, coll)
	if err != nil {
		return p, err
	}
	p.ItemRef = ref
	switch aim := strings.TrimSpace(r.Header.Get("A-IM")); {
	case strings.EqualFold(aim, aimLatestVersion):
		p.Mode = engine.LatestVersion
	case strings.EqualFold(aim, aimAllVersions):
		p.Mode = engine.AllVersionsAndDeletes
		if v := strings.TrimSpace(r.Header.Get(wireFormatHeader)); v != wireFormat20210915 {
			return p, badRequest("The all versions and deletes change feed needs %s: %s; got '%s'.", wireFormatHeader, wireFormat20210915, v)
		}
	default:
		return p, badRequest("The A-IM value '%s' is not supported; use '%s' or '%s'.", aim, aimLatestVersion, aimAllVersions)
	}
	if p.MaxItemCount, err = maxItemCount(r); err != nil {
		return p, err
	}
	p.RangeID = rangeIDHeader(r)
	if p.MinEPK, p.MaxEPK, err = epkSpan(r); err != nil {
		return p, err
	}
	inm := strings.TrimSpace(r.Header.Get("If-None-Match"))
	ims := strings.TrimSpace(r.Header.Get("If-Modified-Since"))
	switch {
	case inm == "*":
		p.Start = engine.StartNow
	case inm != "":
		pos, ok := parseFeedETag(inm)
		if !ok {
			return p, badRequest("The If-None-Match value '%s' is not a change feed continuation.", inm)
		}
		p.Start, p.After = engine.StartAfter, pos
	case ims != "":
		t, err := time.Parse(time.RFC1123, ims)
		if err != nil {
			if t, err = http.ParseTime(ims); err != nil {
				return p, badRequest("The If-Modified-Since value '%s' is not an HTTP date.", ims)
			}
		}
		p.Start, p.Since = engine.StartTime, t
	case p.Mode == engine.AllVersionsAndDeletes:
		// The service's change feed modes: "You can't read changes from
		// the beginning of the container … by using this mode."
		return p, badRequest("The all versions and deletes change feed cannot start from the beginning: start from now (If-None-Match: *) or from a continuation.")
	default:
		p.Start = engine.StartBeginning
	}
	return p, nil
}

// parseFeedETag reads the etag of a change feed position, quoted or not.
func parseFeedETag(s string) (engine.FeedPosition, bool) {
	s = strings.TrimPrefix(s, "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	return engine.ParseFeedPosition(s)
}

// rangeIDHeader reads x-ms-documentdb-partitionkeyrangeid: a range's id,
// or, as the service's gateway also takes it, the container's rid and the
// range's id, separated by a comma.
func rangeIDHeader(r *http.Request) string {
	v := strings.TrimSpace(r.Header.Get("x-ms-documentdb-partitionkeyrangeid"))
	if i := strings.LastIndexByte(v, ','); i >= 0 {
		v = strings.TrimSpace(v[i+1:])
	}
	return v
}

// epkSpan reads x-ms-start-epk and x-ms-end-epk, the effective partition
// keys [min, max) an SDK scopes a feed range's request to ("" for no
// bound).
func epkSpan(r *http.Request) (min, max string, err error) {
	min = strings.TrimSpace(r.Header.Get("x-ms-start-epk"))
	max = strings.TrimSpace(r.Header.Get("x-ms-end-epk"))
	for _, epk := range []string{min, max} {
		if strings.Trim(epk, "0123456789abcdefABCDEF") != "" {
			return "", "", badRequest("The effective partition key '%s' is not hexadecimal.", epk)
		}
	}
	if max != "" && strings.ToUpper(min) >= strings.ToUpper(max) {
		return "", "", badRequest("The effective partition key range ['%s', '%s') is empty.", min, max)
	}
	return min, max, nil
}
