package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// summarizeModule writes a module of its own with the test file given,
// runs go test -json on it with args, and returns what summarize wrote and
// whether it saw a failure.
func summarizeModule(t *testing.T, module, testFile string, args ...string) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module "+module+"\n\ngo 1.22\n")
	write(t, dir+"/x_test.go", testFile)
	cmd := exec.Command("go", append([]string{"test", "-json", "-count=1"}, append(args, ".")...)...)
	cmd.Dir = dir
	out, _ := cmd.Output()
	var b strings.Builder
	failed, err := summarize(strings.NewReader(string(out)), &b)
	if err != nil {
		t.Fatal(err)
	}
	return b.String(), failed
}

// TestSummarize feeds it real go test -json output: a package of its own
// with a passing, a skipped and a failing test, written to a temporary
// module.
func TestSummarize(t *testing.T) {
	got, failed := summarizeModule(t, "example.com/s", `package s

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("zsh is not installed") }
func TestFail(t *testing.T) { t.Log("before"); t.Fatal("broken") }
func TestSub(t *testing.T) { t.Run("inner", func(t *testing.T) { t.Skip("no fish") }) }
`)
	if !failed {
		t.Errorf("a failing test was not reported as a failure:\n%s", got)
	}
	for _, want := range []string{
		"--- FAIL: TestFail", "broken", "FAIL\texample.com/s",
		"2 tests skipped:\n",
		"  example.com/s TestSkip: x_test.go:6: zsh is not installed\n",
		"  example.com/s TestSub/inner: x_test.go:8: no fish\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestPass") {
		t.Errorf("summary shows a passing test:\n%s", got)
	}
}

func TestSummarizeRefusesGarbage(t *testing.T) {
	if _, err := summarize(strings.NewReader("{not json\n"), &strings.Builder{}); err == nil {
		t.Error("no error for a broken JSON line")
	}
}

// TestSummarizeTimeout: a package that times out is reported with the
// test that was running and the end of what it printed, the timeout's
// goroutine dump included.
func TestSummarizeTimeout(t *testing.T) {
	got, failed := summarizeModule(t, "example.com/h", `package h

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}
func TestHangs(t *testing.T) { t.Log("waiting for the broker"); time.Sleep(time.Hour) }
`, "-timeout", "2s")
	if !failed {
		t.Errorf("a timed-out package was not reported as a failure:\n%s", got)
	}
	for _, want := range []string{"--- UNFINISHED: example.com/h TestHangs", "waiting for the broker", "TestHangs"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "UNFINISHED: example.com/h TestQuick") {
		t.Errorf("summary lists a finished test as unfinished:\n%s", got)
	}
}
