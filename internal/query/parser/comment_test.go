package parser

import "testing"

// A -- comment ends at the line break, whichever convention the text
// uses: a bare carriage return does not carry the comment into the next
// clause.
func TestCommentEndsAtAnyLineBreak(t *testing.T) {
	for _, text := range []string{
		"SELECT VALUE c.id FROM c -- all\nWHERE c.n = 1",
		"SELECT VALUE c.id FROM c -- all\r\nWHERE c.n = 1",
		"SELECT VALUE c.id FROM c -- all\rWHERE c.n = 1",
	} {
		q, err := Parse(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if q.Where == nil {
			t.Errorf("%q: the comment swallowed the WHERE clause", text)
		}
	}
}
