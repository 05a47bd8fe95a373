package httpapi

import (
	"net/url"
	"strings"

	"github.com/mayfly-db/mayfly/internal/engine"
)

// resourcePath is a request path split the way the routing gateway splits
// it: the whole path is percent-decoded (and a second time where the result
// still holds escapes), a '#' ends it, '\' separates like '/', and trailing
// spaces of a segment are dropped. The SDKs sign the ids they meant, so an
// id the gateway would read differently fails the signature check (401),
// exactly as against Azure Cosmos DB's gateway.
type resourcePath struct {
	segs []string
	// typ and link are what the client must have signed (docs/protocol.md §1.1).
	typ, link string
	// ridLink is what a client signs instead when the path addresses its
	// resources by rid: the addressed resource's rid (for a feed, create
	// or query, its parent's), lower-cased (docs/protocol.md §2.1). Empty when the
	// path cannot be rid-based.
	ridLink string
}

// errBadPathChars is returned for paths holding control characters the
// gateway refuses outright.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func parseResourcePath(escaped string) (*resourcePath, error) {
	decoded, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, &pathError{"The request path is not correctly percent-encoded."}
	}
	if strings.ContainsAny(decoded, "\r\n\t") {
		return nil, &pathError{"The request path contains characters that are not allowed: carriage return, line feed or tab."}
	}
	if strings.Contains(decoded, "%") {
		if again, err := url.PathUnescape(decoded); err == nil {
			decoded = again
		}
	}
	if i := strings.IndexByte(decoded, '#'); i >= 0 {
		decoded = decoded[:i]
	}
	decoded = strings.ReplaceAll(decoded, `\`, "/")
	decoded = strings.Trim(decoded, "/")
	p := &resourcePath{}
	if decoded != "" {
		p.segs = strings.Split(decoded, "/")
		for i, s := range p.segs {
			p.segs[i] = strings.TrimRight(s, " ")
		}
	}
	p.setLinks()
	return p, nil
}

// parseComputePath splits a request path the way the compute gateway
// does: at every '/' as sent, then each segment is percent-decoded once and
// kept whole. An id holding '/', '\', '#', '?' or control characters,
// escaped by the SDK, therefore reaches its item, where the routing
// gateway would cut it.
func parseComputePath(escaped string) (*resourcePath, error) {
	p := &resourcePath{}
	if trimmed := strings.Trim(escaped, "/"); trimmed != "" {
		p.segs = strings.Split(trimmed, "/")
		for i, s := range p.segs {
			seg, err := url.PathUnescape(s)
			if err != nil {
				return nil, &pathError{"The request path is not correctly percent-encoded."}
			}
			p.segs[i] = seg
		}
	}
	p.setLinks()
	return p, nil
}

// setLinks derives what the client must have signed from the segments.
func (p *resourcePath) setLinks() {
	n := len(p.segs)
	switch {
	case n == 0:
	case n%2 == 0:
		p.typ = strings.ToLower(p.segs[n-2])
		p.link = strings.Join(p.segs, "/")
	default:
		p.typ = strings.ToLower(p.segs[n-1])
		p.link = strings.Join(p.segs[:n-1], "/")
	}
	if p.typ == "offers" && n == 2 {
		p.link = strings.ToLower(p.segs[1])
	}
	if n >= 2 && p.segs[0] == "dbs" && engine.IsDatabaseRid(p.segs[1]) {
		p.ridLink = strings.ToLower(p.segs[n-1-n%2])
	}
	// A delete of all items by partition key is signed as a request on
	// its container (docs/protocol.md §4).
	if n == 6 && p.typ == "operations" && strings.EqualFold(p.segs[5], "partitionkeydelete") {
		p.typ, p.link = "colls", strings.Join(p.segs[:4], "/")
		if p.ridLink != "" {
			p.ridLink = strings.ToLower(p.segs[3])
		}
	}
}
