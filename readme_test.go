package main_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExample checks that README.md's Go example is example_test.go
// from its import block down, so the README shows code that compiles and
// whose printed output is checked.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no ```go block")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(src), "import (")
	if i < 0 {
		t.Fatal("example_test.go has no import block")
	}
	want := string(src[i:])
	// The README indents with tabs as gofmt does; compare as is.
	if got := string(m[1]); got != want {
		t.Fatalf("README.md's Go example differs from example_test.go (from `import (` down); copy one into the other.\nREADME:\n%s\nexample_test.go:\n%s", got, want)
	}
}
