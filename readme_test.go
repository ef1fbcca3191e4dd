package main_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExample checks that README.md's Go examples are, in order,
// example_test.go and engine/example_test.go from their import blocks
// down, so the README shows code that compiles (and, for the first, whose
// printed output is checked).
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	files := []string{"example_test.go", "engine/example_test.go"}
	if len(blocks) != len(files) {
		t.Fatalf("README.md has %d ```go blocks, want %d: %v", len(blocks), len(files), files)
	}
	for i, file := range files {
		checkExample(t, file, blocks[i][1])
	}
}

func checkExample(t *testing.T, file string, block []byte) {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(src), "import (")
	if i < 0 {
		t.Fatalf("%s has no import block", file)
	}
	want := string(src[i:])
	// The README indents with tabs as gofmt does; compare as is.
	if got := string(block); got != want {
		t.Fatalf("README.md's Go example differs from %s (from `import (` down); copy one into the other.\nREADME:\n%s\n%s:\n%s", file, got, file, want)
	}
}
