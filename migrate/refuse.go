package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrRefused is the class of a plan with problems left: the migration
// writes nothing. errors.Is finds it in a *RefusalError.
var ErrRefused = errors.New("migration refused, nothing written")

// Problem codes: stable for scripts (-o json), each overridden by one flag
// naming the problem's subject (Problem.Override).
const (
	// A Kafka Streams store (a changelog, or a store of the state
	// directory) that maps to no store of ours: --skip-store.
	ProblemStoreUnmapped = "store-unmapped"
	// A store of ours that no Kafka Streams store feeds: --new-store.
	ProblemStoreUnfed = "store-unfed"
	// An input topic Kafka Streams committed offsets for that our topology
	// does not read: --skip-input.
	ProblemInputNotRead = "input-not-read"
	// An input topic of ours, holding records, that Kafka Streams
	// committed no offset for: --new-input.
	ProblemInputNotCommitted = "input-not-committed"
	// A mapped store whose Kafka Streams store cannot become ours: the
	// kinds differ (the changelog's cleanup.policy, the state directory's
	// layout), ours cannot be written (no changelog, a kind or buffer
	// layout that is not migrated): --skip-store.
	ProblemStoreKind = "store-kind"
	// A windowed store whose changelog's retention.ms is not ours
	// (window size plus grace, or the retention): --skip-store.
	ProblemRetention = "window-retention"
	// A versioned store whose changelog's min.compaction.lag.ms is not
	// our history retention plus a day: --skip-store.
	ProblemHistoryRetention = "history-retention"
	// A time window starting off our windows' grid (a multiple of the
	// advance): --skip-store.
	ProblemWindowGrid = "window-grid"
	// A window whose latest record's timestamp lies outside the window
	// our definition gives it: --skip-store.
	ProblemWindowTimestamp = "window-timestamp"
	// For our hopping windows, a record missing from a window of its key
	// that ours gives it and that is still open: --skip-store.
	ProblemWindowHop = "window-hop"
	// Two sessions of one key nearer than our inactivity gap (ours
	// would have merged them): --skip-store.
	ProblemSessionGap = "session-gap"
	// A record (or state directory entry) that does not decode in the
	// store's layout or with our serdes: --skip-store.
	ProblemRecord = "record"
	// An override flag naming nothing that has a problem.
	ProblemOverrideUnused = "override-unused"
)

// Problem is one reason a migration is refused. Each names its subject (a
// Kafka Streams store, a store of ours, an input topic) and the flag that
// accepts it, and says what accepting it loses.
type Problem struct {
	Code    string `json:"code"`
	Subject string `json:"subject"`
	Message string `json:"message"`
	// Override is the flag that accepts the problem ("--skip-store
	// counts"); empty for a problem no flag accepts.
	Override string `json:"override,omitempty"`
	// Loses says what a migration that accepts it loses.
	Loses string `json:"loses,omitempty"`
	err   error
}

func (p Problem) String() string {
	s := p.Message
	if p.Override != "" {
		s += " [" + p.Override + " accepts it: " + p.Loses + "]"
	}
	return s
}

// RefusalError is a plan refused: every problem found, none accepted.
type RefusalError struct {
	From     string    `json:"fromApplicationId"`
	To       string    `json:"applicationId"`
	Problems []Problem `json:"problems"`
}

func (e *RefusalError) Error() string {
	var b strings.Builder
	n := "1 problem"
	if len(e.Problems) != 1 {
		n = fmt.Sprintf("%d problems", len(e.Problems))
	}
	fmt.Fprintf(&b, "migrate: %s to %s refused, nothing written: %s", e.From, e.To, n)
	if slices.ContainsFunc(e.Problems, func(p Problem) bool { return p.Override != "" }) {
		b.WriteString(" (the flag in brackets accepts one)")
	}
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Is makes a RefusalError an ErrRefused.
func (e *RefusalError) Is(target error) bool { return target == ErrRefused }

// Unwrap gives the problems' causes, so that errors.Is finds ErrCorrupt
// or ErrSuppressBuffer in a refusal.
func (e *RefusalError) Unwrap() []error {
	var errs []error
	for _, p := range e.Problems {
		if p.err != nil {
			errs = append(errs, p.err)
		}
	}
	return errs
}

// Overrides are the flags that accept problems, each naming its subject.
type Overrides struct {
	// SkipStores are Kafka Streams stores not migrated (--skip-store):
	// their state is lost, and the store of ours they map to starts
	// empty.
	SkipStores []string
	// NewStores are stores of ours that start empty (--new-store).
	NewStores []string
	// SkipInputs are input topics of Kafka Streams our topology does not
	// read (--skip-input).
	SkipInputs []string
	// NewInputs are input topics of ours with no offset committed by
	// Kafka Streams (--new-input): our group starts them at
	// auto.offset.reset.
	NewInputs []string
}

// flagFor is the flag of an override and the names it was given.
func (o Overrides) flagFor(code string) (string, []string) {
	switch code {
	case ProblemStoreUnfed:
		return "--new-store", o.NewStores
	case ProblemInputNotRead:
		return "--skip-input", o.SkipInputs
	case ProblemInputNotCommitted:
		return "--new-input", o.NewInputs
	case ProblemOverrideUnused:
		return "", nil
	}
	return "--skip-store", o.SkipStores
}

// settle splits the problems found into those an override accepts
// (Plan.Accepted) and those left, and adds a problem for every override
// that names nothing with a problem: a typo in an override must not pass
// for an accepted loss. It returns the refusal, or nil.
func settle(p *Plan, o Overrides, found []Problem) error {
	used := map[string]bool{}
	var left []Problem
	for _, pr := range found {
		flag, names := o.flagFor(pr.Code)
		if flag != "" {
			pr.Override = flag + " " + pr.Subject
		}
		if flag != "" && slices.Contains(names, pr.Subject) {
			used[flag+" "+pr.Subject] = true
			p.Accepted = append(p.Accepted, pr)
			continue
		}
		left = append(left, pr)
	}
	for _, f := range []struct {
		flag  string
		names []string
	}{{"--skip-store", o.SkipStores}, {"--new-store", o.NewStores}, {"--skip-input", o.SkipInputs}, {"--new-input", o.NewInputs}} {
		for _, n := range f.names {
			if !used[f.flag+" "+n] {
				left = append(left, Problem{Code: ProblemOverrideUnused, Subject: n,
					Message: fmt.Sprintf("%s %s: nothing named %s has a problem it would accept", f.flag, n, n)})
			}
		}
	}
	if len(left) == 0 {
		return nil
	}
	return &RefusalError{From: p.From, To: p.To, Problems: left}
}

// MarshalJSON writes the refusal with camelCase keys (docs/cli.md) and
// also under from_application_id and application_id, the keys
// docs/migration.md gave scripts before that convention, so that those
// scripts keep reading them.
func (e RefusalError) MarshalJSON() ([]byte, error) {
	type plain RefusalError
	return json.Marshal(struct {
		plain
		OldFrom string `json:"from_application_id"`
		OldTo   string `json:"application_id"`
	}{plain(e), e.From, e.To})
}
