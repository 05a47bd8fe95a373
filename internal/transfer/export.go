package transfer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// A dump is JSON lines: for each container, a line {"$container": its
// properties}, then one line per item, the item as the server returns it
// (system properties included). Import reads the same.

// containerLine introduces the items of one container in a dump.
type containerLine struct {
	Container map[string]any `json:"$container"`
}

// ExportOptions says what to export.
type ExportOptions struct {
	Database  string
	Container string // empty: every container of the database
	// PageSize is how many items one read of the feed asks for (default 1000).
	PageSize int
	// Progress, when set, is called after every page with the items
	// written so far.
	Progress func(items int64)
}

// Export writes the containers and items o names to w as JSON lines, page
// by page: memory holds one page whatever the container's size.
func (c *Client) Export(ctx context.Context, w io.Writer, o ExportOptions) (int64, error) {
	if o.PageSize <= 0 {
		o.PageSize = 1000
	}
	var names []string
	if o.Container != "" {
		names = []string{o.Container}
	} else {
		var list struct {
			DocumentCollections []map[string]any `json:"DocumentCollections"`
		}
		if err := c.getJSON(ctx, "dbs/"+o.Database+"/colls", nil, &list); err != nil {
			return 0, fmt.Errorf("list the containers of %s: %w", o.Database, err)
		}
		for _, coll := range list.DocumentCollections {
			if id, ok := coll["id"].(string); ok {
				names = append(names, id)
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	var n int64
	for _, name := range names {
		var props map[string]any
		if err := c.getJSON(ctx, "dbs/"+o.Database+"/colls/"+name, nil, &props); err != nil {
			return n, fmt.Errorf("read container %s: %w", name, err)
		}
		if err := enc.Encode(containerLine{Container: withoutSystem(props)}); err != nil {
			return n, err
		}
		continuation := ""
		for {
			hdr := map[string]string{"x-ms-max-item-count": strconv.Itoa(o.PageSize)}
			if continuation != "" {
				hdr["x-ms-continuation"] = continuation
			}
			resp, err := c.do(ctx, http.MethodGet, "dbs/"+o.Database+"/colls/"+name+"/docs", hdr, nil, http.StatusOK)
			if err != nil {
				return n, fmt.Errorf("read the items of %s: %w", name, err)
			}
			var page struct {
				Documents []json.RawMessage `json:"Documents"`
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				return n, fmt.Errorf("read the items of %s: %w", name, err)
			}
			for _, d := range page.Documents {
				if _, err := bw.Write(d); err != nil {
					return n, err
				}
				if err := bw.WriteByte('\n'); err != nil {
					return n, err
				}
				n++
			}
			if o.Progress != nil {
				o.Progress(n)
			}
			continuation = resp.Header.Get("x-ms-continuation")
			if continuation == "" {
				break
			}
		}
	}
	return n, bw.Flush()
}

// getJSON reads the resource at path into v.
func (c *Client) getJSON(ctx context.Context, path string, hdr map[string]string, v any) error {
	resp, err := c.do(ctx, http.MethodGet, path, hdr, nil, http.StatusOK)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// withoutSystem drops the properties the server sets (_rid, _ts, _self,
// _etag and the like) from a container's properties.
func withoutSystem(props map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range props {
		if len(k) > 0 && k[0] == '_' {
			continue
		}
		out[k] = v
	}
	return out
}
