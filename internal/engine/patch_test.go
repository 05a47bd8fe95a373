package engine

import (
	"testing"

	"github.com/mayfly-db/mayfly/internal/document"
)

func TestApplyPatch(t *testing.T) {
	base := `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"x"}`
	tests := []struct {
		name  string
		patch string
		want  string // "" means an error
	}{
		{"add field", `[{"op":"add","path":"/new","value":true}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"x","new":true}`},
		{"add replaces field", `[{"op":"add","path":"/s","value":"y"}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"y"}`},
		{"add inserts into array", `[{"op":"add","path":"/arr/1","value":9}]`, `{"id":"1","a":{"b":1},"arr":[1,9,2,3],"n":5,"f":1.5,"s":"x"}`},
		{"add appends with dash", `[{"op":"add","path":"/arr/-","value":9}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3,9],"n":5,"f":1.5,"s":"x"}`},
		{"add past the end fails", `[{"op":"add","path":"/arr/5","value":9}]`, ""},
		{"set overwrites array element", `[{"op":"set","path":"/arr/1","value":9}]`, `{"id":"1","a":{"b":1},"arr":[1,9,3],"n":5,"f":1.5,"s":"x"}`},
		{"set nested", `[{"op":"set","path":"/a/c","value":2}]`, `{"id":"1","a":{"b":1,"c":2},"arr":[1,2,3],"n":5,"f":1.5,"s":"x"}`},
		{"set under missing parent fails", `[{"op":"set","path":"/x/y","value":2}]`, ""},
		{"replace existing", `[{"op":"replace","path":"/n","value":6}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":6,"f":1.5,"s":"x"}`},
		{"replace missing fails", `[{"op":"replace","path":"/zz","value":6}]`, ""},
		{"remove field", `[{"op":"remove","path":"/s"}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5}`},
		{"remove array element shifts", `[{"op":"remove","path":"/arr/0"}]`, `{"id":"1","a":{"b":1},"arr":[2,3],"n":5,"f":1.5,"s":"x"}`},
		{"remove missing fails", `[{"op":"remove","path":"/zz"}]`, ""},
		{"incr int stays int", `[{"op":"incr","path":"/n","value":1}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":6,"f":1.5,"s":"x"}`},
		{"incr float", `[{"op":"incr","path":"/f","value":1}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":2.5,"s":"x"}`},
		{"incr creates", `[{"op":"incr","path":"/c","value":3}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"x","c":3}`},
		{"incr non-number fails", `[{"op":"incr","path":"/s","value":1}]`, ""},
		{"move", `[{"op":"move","from":"/s","path":"/t"}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"t":"x"}`},
		{"move missing from fails", `[{"op":"move","from":"/zz","path":"/t"}]`, ""},
		{"move within an array inserts", `[{"op":"move","from":"/arr/2","path":"/arr/0"}]`, `{"id":"1","a":{"b":1},"arr":[3,1,2],"n":5,"f":1.5,"s":"x"}`},
		{"move into an array inserts", `[{"op":"move","from":"/n","path":"/arr/1"}]`, `{"id":"1","a":{"b":1},"arr":[1,5,2,3],"f":1.5,"s":"x"}`},
		{"index with a leading zero fails", `[{"op":"set","path":"/arr/01","value":9}]`, ""},
		{"signed index fails", `[{"op":"set","path":"/arr/+1","value":9}]`, ""},
		{"move from an index with a leading zero fails", `[{"op":"move","from":"/arr/01","path":"/t"}]`, ""},
		{"escaped pointer", `[{"op":"add","path":"/a~1b~0c","value":1}]`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"x","a/b~c":1}`},
		{"ops apply in order", `{"operations":[{"op":"add","path":"/x","value":1},{"op":"incr","path":"/x","value":1}]}`, `{"id":"1","a":{"b":1},"arr":[1,2,3],"n":5,"f":1.5,"s":"x","x":2}`},
	}
	doc, err := document.Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, _, err := ParsePatch([]byte(tt.patch))
			if err != nil {
				if tt.want == "" {
					return
				}
				t.Fatalf("ParsePatch: %v", err)
			}
			got, derr := applyPatch(doc, ops)
			if tt.want == "" {
				if derr == nil {
					t.Fatalf("want an error, got %s", got.JSON())
				}
				if derr.Code != BadRequest {
					t.Fatalf("error code %v, want BadRequest", derr.Code)
				}
				return
			}
			if derr != nil {
				t.Fatalf("applyPatch: %v", derr)
			}
			if string(got.JSON()) != tt.want {
				t.Fatalf("got  %s\nwant %s", got.JSON(), tt.want)
			}
		})
	}
}

func TestParsePatchRefuses(t *testing.T) {
	for _, body := range []string{
		``, `{}`, `[]`, `{"operations":[]}`, `[{"op":"bogus","path":"/a"}]`, `[{"op":"add","path":"a"}]`,
		`[{"op":"add","path":"/"}]`, `[{"op":"set","path":"/_ts","value":1}]`, `[{"op":"set","path":"/id","value":"x"}]`,
		`[{"op":"incr","path":"/a","value":"x"}]`, `[{"op":"move","from":"/a","path":"/a/b"}]`,
		`[{"op":"move","from":"/id","path":"/oldid"}]`, `[{"op":"move","from":"/_etag","path":"/e"}]`,
		`[{"op":"set","path":"/a~2b","value":1}]`, `[{"op":"set","path":"/a~","value":1}]`,
		`{"condition":5,"operations":[{"op":"add","path":"/a","value":1}]}`,
		`[` + repeatOps(11) + `]`,
	} {
		if _, _, err := ParsePatch([]byte(body)); err == nil {
			t.Errorf("ParsePatch(%s) succeeded", body)
		} else if ErrorCode(err) != BadRequest {
			t.Errorf("ParsePatch(%s): code %v, want BadRequest", body, ErrorCode(err))
		}
	}
}

func repeatOps(n int) string {
	s := ""
	for i := 0; i < n; i++ {
		if i > 0 {
			s += ","
		}
		s += `{"op":"add","path":"/a","value":1}`
	}
	return s
}

func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":2}]}`), []byte(`[{"op":"add","path":"/a/1/c","value":3}]`))
	f.Add([]byte(`{"a":1}`), []byte(`[{"op":"move","from":"/a","path":"/b"},{"op":"incr","path":"/b","value":2.5}]`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		d, err := document.Parse(doc)
		if err != nil || d.Kind() != document.Object {
			return
		}
		ops, _, err := ParsePatch(patch)
		if err != nil {
			if ErrorCode(err) != BadRequest {
				t.Fatalf("ParsePatch error is not a BadRequest: %v", err)
			}
			return
		}
		out, derr := applyPatch(d, ops)
		if derr != nil {
			return
		}
		if _, err := document.Parse(out.JSON()); err != nil {
			t.Fatalf("patched document does not re-parse: %v", err)
		}
	})
}
