package golden

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files with what the code gives now")

// Check compares got with the file at path, failing t with both when they
// differ; with -update it writes got to path instead. pkg names the
// package in the hint, as go test would be asked: "./cmd".
func Check(t testing.TB, pkg, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test %s -update creates it)", err, pkg)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test %s -update rewrites it)\ngot:\n%s\nwant:\n%s", path, pkg, got, want)
	}
}
