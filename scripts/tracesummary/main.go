// Command tracesummary reads an execution trace (runtime/trace, as
// `benchcompare -trace` writes one) and prints, for one region of it, how
// long each kind of goroutine ran, waited for a core (runnable) and
// waited for something else, and where it waited, with how many times.
// It is the headless view of what `go tool trace` shows in a browser: it
// tells a pipeline short of CPU (goroutines runnable, no core idle) from
// one that stalls (goroutines waiting, cores idle).
//
// Usage:
//
//	go run ./scripts/tracesummary -region "stoatctl map" [-n 2] trace.out
//
// Goroutines are grouped by the function they started in; those already
// running when the trace began by the outermost function of the first
// stack the trace gives them.
package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/exp/trace"
)

func main() {
	fs := flag.NewFlagSet("tracesummary", flag.ContinueOnError)
	region := fs.String("region", "", "the region to summarize, by name (benchcompare names each run \"system topology\")")
	nth := fs.Int("n", 1, "which occurrence of the region, from 1")
	top := fs.Int("top", 25, "rows of each table")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if *region == "" || fs.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: tracesummary -region NAME [-n N] [-top K] TRACE")
		os.Exit(2)
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracesummary:", err)
		os.Exit(1)
	}
	defer f.Close()
	s, err := summarize(f, *region, *nth)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tracesummary: %s: %v\n", fs.Arg(0), err)
		os.Exit(1)
	}
	s.write(os.Stdout, *top)
}

// Summary is what the goroutines did in one region of a trace.
type Summary struct {
	Region string
	Window time.Duration
	// Procs is how many Ps the trace shows (GOMAXPROCS, once each has
	// run); Idle the time Ps were without a goroutine, summed over them.
	Procs int
	Idle  time.Duration
	// States holds the time in each state by goroutine kind: "running",
	// "runnable", "syscall", or "waiting" followed by the wait's site.
	States map[Key]time.Duration
	// Waits counts the times goroutines of a kind began to wait, by site.
	Waits map[Key]int
}

// Key names a goroutine kind (its start function) and a state.
type Key struct{ Kind, State string }

// ErrNoRegion is the error of a trace without the region asked for.
var ErrNoRegion = errors.New("no such region in the trace")

type gor struct {
	kind   string
	state  trace.GoState
	since  trace.Time
	waitAt string
}

// summarize reads a trace and summarizes the nth region named region.
func summarize(r io.Reader, region string, nth int) (*Summary, error) {
	tr, err := trace.NewReader(r)
	if err != nil {
		return nil, err
	}
	s := &Summary{Region: region, States: map[Key]time.Duration{}, Waits: map[Key]int{}}
	gs := map[trace.GoID]*gor{}
	seen, in := 0, false
	var start, last trace.Time
	running := 0
	procs := map[trace.ProcID]bool{}
	for {
		ev, err := tr.ReadEvent()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		now := ev.Time()
		if p := ev.Proc(); p != trace.NoProc && !procs[p] {
			procs[p] = true
			s.Procs = len(procs)
		}
		if in && running < s.Procs {
			s.Idle += time.Duration(now-last) * time.Duration(s.Procs-running)
		}
		last = now
		switch ev.Kind() {
		case trace.EventRegionBegin:
			if ev.Region().Type == region {
				if seen++; seen == nth {
					in, start = true, now
					for _, g := range gs {
						g.since = now
					}
				}
			}
		case trace.EventRegionEnd:
			if in && ev.Region().Type == region {
				for _, g := range gs {
					s.add(g, now)
				}
				s.Window = time.Duration(now - start)
				return s, nil
			}
		case trace.EventStateTransition:
			st := ev.StateTransition()
			if st.Resource.Kind != trace.ResourceGoroutine {
				continue
			}
			from, to := st.Goroutine()
			id := st.Resource.Goroutine()
			g := gs[id]
			if g == nil {
				g = &gor{since: now, state: from}
				gs[id] = g
			}
			if g.kind == "" {
				g.kind = kindOf(from, st.Stack, ev.Stack())
			}
			if in {
				s.add(g, now)
				if to == trace.GoWaiting {
					s.Waits[Key{g.kind, site(ev.Stack())}]++
				}
			}
			if from == trace.GoRunning {
				running--
			}
			if to == trace.GoRunning {
				running++
			}
			if to == trace.GoWaiting {
				g.waitAt = site(ev.Stack())
			}
			g.state, g.since = to, now
		}
	}
	if seen < nth {
		return nil, fmt.Errorf("%w: %q (%d of it, asked for number %d)", ErrNoRegion, region, seen, nth)
	}
	return nil, fmt.Errorf("region %q number %d does not end before the trace does", region, nth)
}

// add counts the time g spent in its state up to now.
func (s *Summary) add(g *gor, now trace.Time) {
	d := time.Duration(now - g.since)
	g.since = now
	if d <= 0 || g.kind == "" {
		return
	}
	switch g.state {
	case trace.GoRunning:
		s.States[Key{g.kind, "running"}] += d
	case trace.GoRunnable:
		s.States[Key{g.kind, "runnable"}] += d
	case trace.GoSyscall:
		s.States[Key{g.kind, "syscall"}] += d
	case trace.GoWaiting:
		s.States[Key{g.kind, "waiting at " + g.waitAt}] += d
	}
}

// kindOf names a goroutine: the function it started in, from the stack
// of its creation, or for one already running when the trace began the
// outermost function of the first stack the trace gives it.
func kindOf(from trace.GoState, start, stack trace.Stack) string {
	if from == trace.GoNotExist {
		for f := range start.Frames() {
			return f.Func
		}
	}
	var outer string
	for f := range stack.Frames() {
		if f.Func != "runtime.goexit" {
			outer = f.Func
		}
	}
	return outer
}

// site is where a goroutine waits: the innermost frame outside the
// runtime and the standard library's synchronisation, and its caller.
func site(st trace.Stack) string {
	var out []string
	for f := range st.Frames() {
		if len(out) == 0 && internal(f.Func) {
			continue
		}
		out = append(out, f.Func)
		if len(out) == 2 {
			break
		}
	}
	if len(out) == 0 {
		return "(runtime)"
	}
	return strings.Join(out, " < ")
}

func internal(fn string) bool {
	for _, p := range []string{"runtime.", "internal/", "sync.", "time.Sleep", "net.", "os."} {
		if strings.HasPrefix(fn, p) {
			return true
		}
	}
	return false
}

// write prints the summary: the window and idle cores, then each kind of
// goroutine's running, runnable and waiting time, busiest first, then
// where goroutines began to wait, most often first; top rows of each.
func (s *Summary) write(w io.Writer, top int) {
	fmt.Fprintf(w, "region %q: %v; %d Ps, idle %v (%.0f %% of their time)\n", s.Region, s.Window.Round(time.Microsecond),
		s.Procs, s.Idle.Round(time.Microsecond), 100*float64(s.Idle)/float64(max(1, int64(s.Window)*int64(max(1, s.Procs)))))
	type kind struct {
		name                  string
		run, ready, sys, wait time.Duration
	}
	byName := map[string]*kind{}
	for k, d := range s.States {
		g := byName[k.Kind]
		if g == nil {
			g = &kind{name: k.Kind}
			byName[k.Kind] = g
		}
		switch {
		case k.State == "running":
			g.run += d
		case k.State == "runnable":
			g.ready += d
		case k.State == "syscall":
			g.sys += d
		default:
			g.wait += d
		}
	}
	kinds := slices.Collect(maps.Values(byName))
	slices.SortFunc(kinds, func(a, b *kind) int { return cmp.Or(cmp.Compare(b.run, a.run), cmp.Compare(a.name, b.name)) })
	fmt.Fprintf(w, "\n%12s %12s %12s %12s  goroutines started in\n", "running", "runnable", "syscall", "waiting")
	for i, g := range kinds {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%12v %12v %12v %12v  %s\n", g.run.Round(time.Microsecond), g.ready.Round(time.Microsecond),
			g.sys.Round(time.Microsecond), g.wait.Round(time.Microsecond), g.name)
	}
	type wait struct {
		k Key
		n int
	}
	var waits []wait
	for k, n := range s.Waits {
		waits = append(waits, wait{k, n})
	}
	slices.SortFunc(waits, func(a, b wait) int {
		return cmp.Or(b.n-a.n, cmp.Compare(a.k.Kind, b.k.Kind), cmp.Compare(a.k.State, b.k.State))
	})
	fmt.Fprintf(w, "\n%8s  %-60s %s\n", "waits", "goroutines started in", "waiting at")
	for i, x := range waits {
		if i == top {
			break
		}
		fmt.Fprintf(w, "%8d  %-60s %s\n", x.n, x.k.Kind, x.k.State)
	}
}
