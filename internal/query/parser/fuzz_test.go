package parser_test

import (
	"strings"
	"testing"

	"github.com/mayfly-db/mayfly/internal/query/parser"
)

var seeds = []string{
	"SELECT * FROM c",
	"SELECT VALUE c.id FROM root c WHERE c.id IN (@a, @b) ORDER BY c.ts DESC",
	"SELECT DISTINCT TOP 3 c.a, c[\"b\"][0] AS x FROM c JOIN t IN c.tags WHERE t LIKE 'a%' ESCAPE '!'",
	"SELECT c.k, COUNT(1) AS n FROM c GROUP BY c.k OFFSET 1 LIMIT 2",
	"SELECT VALUE {a: [1, 0x1f, 2.5e-3], \"b\": null ?? undefined ? 'x' : \"y\\u0041\"}",
	"SELECT EXISTS(SELECT VALUE 1), ARRAY(SELECT t FROM t IN c.x), (SELECT VALUE 2) FROM c",
	"SELECT * FROM c WHERE NOT c.a BETWEEN -1 AND ~2 AND c.b NOT IN (1) OR c.c >>> 1 <> 2 || 'x'",
	"SELECT udf.f(c), LEFT(c.s, 1) FROM c -- comment",
}

// deepSeeds are chains that build deep trees from flat text: they must end
// in the depth error (or, for AND, OR and ??, a balanced tree), never in a
// tree that overflows the stack of whatever walks it.
var deepSeeds = []string{
	"SELECT VALUE 1" + strings.Repeat("+1", 300),
	"SELECT * FROM c WHERE c" + strings.Repeat(".a", 300),
	"SELECT * FROM c WHERE c" + strings.Repeat("[0]", 300),
	"SELECT * FROM c WHERE c.a = 1" + strings.Repeat(" OR c.a = 1", 300),
	"SELECT * FROM c WHERE c.a" + strings.Repeat(" IN (1)", 300),
	"SELECT VALUE " + strings.Repeat("-", 300) + "1",
	"SELECT VALUE " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300),
}

// FuzzParse checks that any input parses or fails cleanly, and that what
// parses prints to text that parses back to the same print.
func FuzzParse(f *testing.F) {
	for _, s := range append(seeds, deepSeeds...) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		q, err := parser.Parse(text)
		if err != nil {
			if _, ok := err.(*parser.Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		printed := q.String()
		q2, err := parser.Parse(printed)
		if err != nil {
			t.Fatalf("printed form %q of %q does not parse: %v", printed, text, err)
		}
		if again := q2.String(); again != printed {
			t.Fatalf("print is not stable:\n%s\n%s", printed, again)
		}
	})
}
