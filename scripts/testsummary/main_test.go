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

// TestSummarize feeds it real go test -json output: a package of its own
// with a passing, a skipped and a failing test, written to a temporary
// module.
func TestSummarize(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/s\n\ngo 1.22\n")
	write(t, dir+"/s_test.go", `package s

import "testing"

func TestPass(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("zsh is not installed") }
func TestFail(t *testing.T) { t.Log("before"); t.Fatal("broken") }
func TestSub(t *testing.T) { t.Run("inner", func(t *testing.T) { t.Skip("no fish") }) }
`)
	cmd := exec.Command("go", "test", "-json", "-count=1", ".")
	cmd.Dir = dir
	out, _ := cmd.Output()
	var b strings.Builder
	failed, err := summarize(strings.NewReader(string(out)), &b)
	if err != nil {
		t.Fatal(err)
	}
	got := b.String()
	if !failed {
		t.Errorf("a failing test was not reported as a failure:\n%s", got)
	}
	for _, want := range []string{
		"--- FAIL: TestFail", "broken", "FAIL\texample.com/s",
		"2 tests skipped:\n",
		"  example.com/s TestSkip: s_test.go:6: zsh is not installed\n",
		"  example.com/s TestSub/inner: s_test.go:8: no fish\n",
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
	dir := t.TempDir()
	write(t, dir+"/go.mod", "module example.com/h\n\ngo 1.22\n")
	write(t, dir+"/h_test.go", `package h

import (
	"testing"
	"time"
)

func TestQuick(t *testing.T) {}
func TestHangs(t *testing.T) { t.Log("waiting for the broker"); time.Sleep(time.Hour) }
`)
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout", "2s", ".")
	cmd.Dir = dir
	out, _ := cmd.Output()
	var b strings.Builder
	failed, err := summarize(strings.NewReader(string(out)), &b)
	if err != nil {
		t.Fatal(err)
	}
	got := b.String()
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
