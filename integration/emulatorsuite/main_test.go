package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseList(t *testing.T) {
	got, err := parseList(strings.NewReader(`# header

TestA   pass
TestB   xfail query language: issue 4
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []expectation{
		{Name: "TestA", Pass: true, Line: 3},
		{Name: "TestB", Reason: "query language: issue 4", Line: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseList = %+v, want %+v", got, want)
	}
}

func TestParseListErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"TestA", "line 1: want"},
		{"TestA xfail", "needs a reason"},
		{"TestA pass because", "text after"},
		{"TestA maybe", "unknown expectation"},
		{"TestA pass\nTestA xfail x", "already listed on line 1"},
	} {
		_, err := parseList(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseList(%q) error = %v, want one containing %q", tt.in, err, tt.want)
		}
	}
}

func TestFindTestsAndCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("emulator_a_test.go", `package x
import "testing"
func TestOne(t *testing.T) {}
func TestTwo(t *testing.T) {}
func Testlower(t *testing.T) {}
func TestHelper(x int) {}
func BenchmarkX(b *testing.B) {}
type s struct{}
func (s) TestMethod(t *testing.T) {}
`)
	write("emulator_b_test.go", "package x\nimport \"testing\"\nfunc Test(t *testing.T) {}\n")
	write("other_test.go", "package x\nimport \"testing\"\nfunc TestNotEmulator(t *testing.T) {}\n")

	tests, err := findTests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Test", "TestOne", "TestTwo"}; !reflect.DeepEqual(tests, want) {
		t.Fatalf("findTests = %q, want %q", tests, want)
	}

	list := []expectation{{Name: "Test", Pass: true, Line: 1}, {Name: "TestOne", Pass: true, Line: 2}, {Name: "TestGone", Line: 3, Reason: "x"}}
	problems := compareList(list, tests)
	if len(problems) != 2 ||
		!strings.Contains(problems[0], "line 3 lists TestGone") ||
		!strings.Contains(problems[1], "TestTwo is missing") {
		t.Errorf("compareList = %q", problems)
	}
}

func TestFirstFailure(t *testing.T) {
	out := []byte(`=== RUN   TestItemCRUD
    emulator_cosmos_item_test.go:42: Failed to create item: POST https://localhost:8081/dbs/itemCRUD/colls/aContainer/docs
--- FAIL: TestItemCRUD (0.01s)
`)
	if got := firstFailure(out); !strings.HasPrefix(got, "emulator_cosmos_item_test.go:42: Failed to create item") {
		t.Errorf("firstFailure = %q", got)
	}
}

func TestFirstFailureSDKError(t *testing.T) {
	out := []byte(`=== RUN   TestReadMany_NullPartitionKey
    emulator_cosmos_read_many_items_test.go:19: 
        	Error Trace:	/tmp/x/emulator_cosmos_read_many_items_test.go:19
        	Error:      	Received unexpected error:
        	            	POST https://localhost:8081/dbs/readmany_nullpk_db/colls
        	            	--------------------------------------------------------------------------------
        	            	RESPONSE 400: 400 Bad Request
        	            	ERROR CODE: 400 Bad Request
        	            	--------------------------------------------------------------------------------
        	            	{
        	            	  "code": "BadRequest",
        	            	  "message": "The uniqueKeyPolicy must be an object."
        	            	}
        	Test:       	TestReadMany_NullPartitionKey
--- FAIL: TestReadMany_NullPartitionKey (0.01s)
`)
	want := "emulator_cosmos_read_many_items_test.go:19: Error: Received unexpected error: " +
		"POST https://localhost:8081/dbs/readmany_nullpk_db/colls RESPONSE 400: 400 Bad Request " +
		`"message": "The uniqueKeyPolicy must be an object."`
	// The test-file line ends with ":" and is followed by the trace; the
	// summary starts at the assertion.
	if got := firstFailure(out); got != want {
		t.Errorf("firstFailure =\n%s\nwant\n%s", got, want)
	}
}
