package topofile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stoatflow/stoatctl/engine/topology"
)

// Level is how serious a finding is.
type Level string

const (
	LevelError   Level = "error"
	LevelWarning Level = "warning"
)

// Finding is one thing Validate found.
type Finding struct {
	Level Level
	// Message names what is at fault: "file:line:column: ..." for the
	// file's own problems, "topology: node X: ..." for build rules.
	Message string
}

func (f Finding) String() string { return string(f.Level) + ": " + f.Message }

// Report is the result of validating a topology.
type Report struct {
	// Ref is the topology as the caller named it.
	Ref      string
	Findings []Finding
	// Built is the built topology, nil when it failed to load or build.
	Built *topology.Built
}

// Errors counts the error-level findings.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == LevelError {
			n++
		}
	}
	return n
}

// OK reports whether nothing error-level was found.
func (r *Report) OK() bool { return r.Errors() == 0 }

// Validate resolves ref (see Resolve), compiles it and builds it with its
// configuration, so that every build-time rule runs. Problems are
// findings, not an error: the error is for a ref that could not be read
// at all.
func Validate(ref, baseDir string) (*Report, error) {
	r := &Report{Ref: ref}
	f, err := Resolve(ref, baseDir)
	if err != nil {
		var fe *Error
		if !errors.As(err, &fe) {
			return nil, err
		}
		r.add(LevelError, err)
		return r, nil
	}
	built, err := f.Topology.Build(configOf(f))
	if err != nil {
		r.add(LevelError, err)
	} else {
		r.Built = built
	}
	if built != nil {
		for _, w := range built.Warnings {
			r.Findings = append(r.Findings, Finding{Level: LevelWarning, Message: w.String()})
		}
	}
	return r, nil
}

// add records each error of a joined error as its own finding.
func (r *Report) add(level Level, err error) {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		for _, line := range strings.Split(e.Error(), "\n") {
			if line != "" {
				r.Findings = append(r.Findings, Finding{Level: level, Message: line})
			}
		}
	}
}

// Summary is one line saying what was found.
func (r *Report) Summary() string {
	warnings := len(r.Findings) - r.Errors()
	if r.OK() {
		if r.Built == nil {
			return r.Ref + ": ok"
		}
		return fmt.Sprintf("%s: ok (%s, %s, %s)", r.Ref, plural(len(r.Built.Subtopologies), "sub-topology"), plural(len(r.Built.Stores), "store"), plural(warnings, "warning"))
	}
	return fmt.Sprintf("%s: %s, %s", r.Ref, plural(r.Errors(), "error"), plural(warnings, "warning"))
}

func plural(n int, what string) string {
	switch {
	case n == 1:
		return "1 " + what
	case strings.HasSuffix(what, "y"):
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}
