// Command testsummary reads `go test -json` on stdin and prints what
// `go test` prints without -v (a line per package, and the output of every
// test that failed), then the tests that were skipped, each with its
// reason, so that a run which skipped tests does not read as a clean ok.
// It exits 1 when a test or package failed or the input is not go test's
// JSON. scripts/test.sh pipes its test step through it.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

func main() {
	failed, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}

// event is one line of go test -json (test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ pkg, test, reason string }

// summarize copies the package lines and failing tests' output from r to
// w, then lists the skipped tests; failed reports whether anything
// failed.
func summarize(r io.Reader, w io.Writer) (failed bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	outputs := map[string][]string{} // package + test -> its output lines
	var skips []skip
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			// Build errors and the like come as plain text.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return true, fmt.Errorf("line %d: %w", n, err)
		}
		id := e.Package + " " + e.Test
		switch {
		case e.Action == "build-output":
			io.WriteString(w, e.Output)
		case e.Action == "build-fail":
			failed = true
		case e.Action == "output" && e.Test == "":
			// The package's own lines: ok, FAIL, no test files, panics.
			if !strings.HasPrefix(e.Output, "=== ") && e.Output != "PASS\n" && e.Output != "FAIL\n" {
				io.WriteString(w, e.Output)
			}
		case e.Action == "output":
			outputs[id] = append(outputs[id], e.Output)
		case e.Action == "fail" && e.Test != "":
			failed = true
			for _, o := range outputs[id] {
				io.WriteString(w, o)
			}
			delete(outputs, id)
		case e.Action == "fail":
			// A package that fails with tests still open timed out or
			// crashed: what those tests printed says where it hung.
			failed = true
			printUnfinished(w, e.Package, outputs)
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, reason(outputs[id])})
			delete(outputs, id)
		case e.Action == "pass":
			delete(outputs, id)
		}
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	if len(skips) == 0 {
		fmt.Fprintln(w, "no test skipped")
		return failed, nil
	}
	fmt.Fprintf(w, "%d tests skipped:\n", len(skips))
	for _, s := range skips {
		fmt.Fprintf(w, "  %s %s: %s\n", s.pkg, s.test, s.reason)
	}
	return failed, nil
}

// unfinishedTail is how many of an unfinished test's last output lines
// are printed: enough for the timeout's goroutine dump to show the test's
// own stack, not the whole dump.
const unfinishedTail = 150

// printUnfinished prints the tests of pkg that never passed, failed or
// skipped, each with the end of its output, and forgets them.
func printUnfinished(w io.Writer, pkg string, outputs map[string][]string) {
	var ids []string
	for id := range outputs {
		if strings.HasPrefix(id, pkg+" ") {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		lines := outputs[id]
		test := strings.TrimPrefix(id, pkg+" ")
		if test == "" {
			continue
		}
		fmt.Fprintf(w, "--- UNFINISHED: %s %s (the package failed while it ran; its last %d lines follow)\n", pkg, test, min(len(lines), unfinishedTail))
		for _, o := range lines[max(0, len(lines)-unfinishedTail):] {
			io.WriteString(w, o)
		}
		delete(outputs, id)
	}
}

// reason is what a skipped test said: its output but the run and skip
// lines, on one line.
func reason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
