package auth

import (
	"net/url"
	"strings"
)

// Resource is what a request path addresses.
type Resource struct {
	// Type is the resource type a signature covers: the type segment
	// ("dbs", "colls", "docs", "offers", ...) nearest the end of the path,
	// or "" for the account (GET /).
	Type string
	// Link is the resource link a signature covers: the unescaped path
	// without its leading and trailing slashes, less the final type segment
	// when the path names a feed. An offer addressed by rid is its rid
	// alone, lowercased, as the SDKs sign it.
	Link string
	// Segments are the unescaped segments of the path. An even number
	// names one resource (dbs/db1), an odd number a feed (dbs/db1/colls).
	// A segment may contain '/' when the client escaped it as %2F.
	Segments []string
}

// ParseResource parses a request path as it came on the wire, still escaped
// (URL.EscapedPath), into the resource it addresses:
//
//  1. trim the slashes at both ends and split on '/';
//  2. unescape each segment, so that an id holding an escaped %2F stays
//     one segment;
//  3. with an even number of segments the type is the next-to-last one and
//     the link the whole path; with an odd number the type is the last one
//     and the link everything before it;
//  4. an offer addressed by rid (/offers/{rid}/) is linked by the rid alone,
//     lowercased.
//
// The empty path and "/" address the account: type "" and link "". A path
// with an empty segment (//) or an invalid escape fails with a 400 *Error.
func ParseResource(escapedPath string) (Resource, error) {
	trimmed := strings.Trim(escapedPath, "/")
	if trimmed == "" {
		return Resource{}, nil
	}
	segs := strings.Split(trimmed, "/")
	for i, s := range segs {
		if s == "" {
			return Resource{}, badPath(escapedPath, "it has an empty segment")
		}
		u, err := url.PathUnescape(s)
		if err != nil {
			return Resource{}, badPath(escapedPath, "it has an invalid escape")
		}
		segs[i] = u
	}
	r := Resource{Segments: segs}
	n := len(segs)
	if n%2 == 0 {
		r.Type = segs[n-2]
		r.Link = strings.Join(segs, "/")
		if n == 2 && segs[0] == "offers" {
			r.Link = strings.ToLower(segs[1])
		}
	} else {
		r.Type = segs[n-1]
		r.Link = strings.Join(segs[:n-1], "/")
	}
	return r, nil
}

func badPath(path, why string) *Error {
	return &Error{
		Status:  StatusBadRequest,
		Code:    CodeBadRequest,
		Message: "The request path " + quote(path) + " is invalid: " + why + ".",
	}
}

// quote shows a client-supplied string in a message, cut to a sane length.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		s = s[:max] + "..."
	}
	return "'" + s + "'"
}
