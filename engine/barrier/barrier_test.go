package barrier_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/window"
)

// TestProtocol runs the scripts in testdata/. Each drives one lane and one
// cutter through events and prints what the protocol answers. Rewrite the
// expected output with: go test ./engine/barrier -rewrite
//
// Commands:
//
//	lane producers=N [floor=T] [bound=B]  a fresh lane (and aligner; bound
//	                                    caps the stash per producer)
//	solo [floor=T]                      a fresh solo lane (one producer)
//	advance watermark=T                 the lane's watermark is T: what it owes
//	tick                                the lane's wall clock moved: what it owes
//	record from=P id=X                  a record from producer P (refused
//	                                    while P is blocked)
//	marker from=P epoch=N stamp=T [final]  producer P's marker of barrier N
//	late close=T                        is a window closing at T late at the lane's floor?
//	cutter [stamp=T]                    a fresh cutter
//	due records=N outputs=N watermark=T [wall] [final]  the idle rule
//	cut watermark=T [final]             cut the next barrier (refused while one is in flight)
//	commit epoch=N                      epoch N's transaction committed
//	closes every=T | closes unknown     the operators' closes: every multiple of T, or unknown
//	hurry                               whether the next barrier comes at the minimum interval
//
// Times are integers or "unknown".
func TestProtocol(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var (
			lane    *barrier.Lane
			aligner *barrier.Aligner[string]
			cutter  *barrier.Cutter
		)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			_, final := args["final"]
			switch d.Cmd {
			case "lane":
				lane = barrier.NewLane(tm(t, args, "floor"))
				if _, ok := args["bound"]; ok {
					aligner = barrier.NewBoundedAligner[string](num(t, args, "producers"), num(t, args, "bound"))
				} else {
					aligner = barrier.NewAligner[string](num(t, args, "producers"))
				}
				return state(lane)
			case "solo":
				lane = barrier.NewSoloLane(tm(t, args, "floor"))
				aligner = barrier.NewAligner[string](1)
				return state(lane)
			case "advance":
				return steps(lane.Advance(tm(t, args, "watermark"))) + state(lane)
			case "tick":
				return steps(lane.Tick()) + state(lane)
			case "record":
				id, from := args["id"], num(t, args, "from")
				if aligner.Blocked(from) {
					return fmt.Sprintf("blocked: producer %d waits to send %s (%d of its items stashed, bound %d)", from, id, aligner.StashedFrom(from), aligner.Bound())
				}
				if !aligner.Offer(from, id) {
					return stashed(aligner, from, id)
				}
				return "process " + id
			case "marker":
				from := num(t, args, "from")
				b := barrier.Barrier{Epoch: int64(num(t, args, "epoch")), Stamp: tm(t, args, "stamp"), Final: final}
				if aligner.Blocked(from) {
					return fmt.Sprintf("blocked: producer %d waits to send its marker of epoch %d", from, b.Epoch)
				}
				if !aligner.Offer(from, fmt.Sprintf("marker(%d from %d)", b.Epoch, from)) {
					return stashed(aligner, from, fmt.Sprintf("marker of epoch %d", b.Epoch))
				}
				aligned, released := aligner.Marker(from)
				if !aligned {
					return fmt.Sprintf("wait for %d more", aligner.Waiting())
				}
				var out strings.Builder
				fmt.Fprintf(&out, "cross epoch %d stamp %s%s\n", b.Epoch, ts(b.Stamp), map[bool]string{true: " (final)"}[final])
				out.WriteString(steps(lane.Cross(b)))
				if len(released) > 0 {
					fmt.Fprintf(&out, "release %s\n", strings.Join(released, " "))
				}
				out.WriteString(state(lane))
				return out.String()
			case "late":
				c := tm(t, args, "close")
				if window.Closed(c, lane.Floor) {
					return fmt.Sprintf("late: close %s <= floor %s", ts(c), ts(lane.Floor))
				}
				return fmt.Sprintf("admitted: close %s > floor %s", ts(c), ts(lane.Floor))
			case "cutter":
				cutter = barrier.NewCutter(tm(t, args, "stamp"))
				return cut(cutter)
			case "due":
				_, wall := args["wall"]
				a := barrier.Activity{Records: int64(num(t, args, "records")), Outputs: int64(num(t, args, "outputs")),
					Watermark: tm(t, args, "watermark"), WallClockWork: wall}
				if cutter.Due(a, final) {
					return "due"
				}
				return "idle"
			case "cut":
				if cutter.InFlight() {
					return fmt.Sprintf("wait: epoch %d is in flight", cutter.Epoch-1)
				}
				b := cutter.Cut(tm(t, args, "watermark"), final)
				return fmt.Sprintf("barrier epoch=%d stamp=%s%s\n%s", b.Epoch, ts(b.Stamp), map[bool]string{true: " final"}[b.Final], cut(cutter))
			case "commit":
				cutter.Commit(int64(num(t, args, "epoch")))
				return cut(cutter)
			case "closes":
				// Windows of size every emitted on close, closing at
				// every multiple of it (from every), as a tumbling
				// window's do; "unknown" for sessions.
				if _, ok := args["unknown"]; ok {
					cutter.Closes = func(int64) (int64, bool) { return 0, false }
					return "closes: unknown"
				}
				every := tm(t, args, "every")
				cutter.Closes = func(after int64) (int64, bool) {
					if after < every {
						return every, true
					}
					return (after/every + 1) * every, true
				}
				return fmt.Sprintf("closes: every %s", ts(every))
			case "hurry":
				if cutter.Hurry() {
					return "hurry: next barrier at the minimum interval"
				}
				return "no hurry"
			}
			t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
			return ""
		})
	})
}

// stashed says what the aligner stashed; with a bound, how much of it is
// the producer's and whether the producer is now blocked.
func stashed(a *barrier.Aligner[string], from int, what string) string {
	if a.Bound() == 0 {
		return fmt.Sprintf("stash %s (%d stashed)", what, a.Stashed())
	}
	out := fmt.Sprintf("stash %s (%d stashed, %d of %d from producer %d)", what, a.Stashed(), a.StashedFrom(from), a.Bound(), from)
	if a.Blocked(from) {
		out += fmt.Sprintf("; producer %d blocked", from)
	}
	return out
}

func num(t *testing.T, args map[string]string, key string) int {
	t.Helper()
	n, err := strconv.Atoi(args[key])
	if err != nil {
		t.Fatalf("%s=%q: %v", key, args[key], err)
	}
	return n
}

func tm(t *testing.T, args map[string]string, key string) int64 {
	t.Helper()
	v, ok := args[key]
	if !ok || v == "unknown" {
		return barrier.Unknown
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", key, v, err)
	}
	return n
}

func ts(v int64) string {
	if v == barrier.Unknown {
		return "unknown"
	}
	return strconv.FormatInt(v, 10)
}

// steps lists steps one a line, indented, or says there are none.
func steps(ss []barrier.Step) string {
	if len(ss) == 0 {
		return "  (nothing)\n"
	}
	var out strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&out, "  %s\n", step(s))
	}
	return out.String()
}

func step(s barrier.Step) string {
	switch s.Kind {
	case barrier.EventTimers:
		if s.Due != s.Floor {
			return fmt.Sprintf("%s due=%s floor=%s", s.Kind, ts(s.Due), ts(s.Floor))
		}
	case barrier.Flush:
		return fmt.Sprintf("%s frontier=%s floor=%s", s.Kind, ts(s.Frontier), ts(s.Floor))
	case barrier.Report, barrier.Forward:
		return fmt.Sprintf("%s epoch=%d", s.Kind, s.Epoch)
	case barrier.Enter:
		return fmt.Sprintf("%s epoch=%d floor=%s", s.Kind, s.Epoch, ts(s.Floor))
	case barrier.Commit:
		return s.Kind.String()
	}
	return fmt.Sprintf("%s floor=%s", s.Kind, ts(s.Floor))
}

func state(l *barrier.Lane) string {
	return fmt.Sprintf("lane: epoch=%d floor=%s frontier=%s%s", l.Epoch, ts(l.Floor), ts(l.Flushed), map[bool]string{true: " (solo)"}[l.Solo])
}

func cut(c *barrier.Cutter) string {
	return fmt.Sprintf("cutter: next=%d committed=%d stamp=%s frontier=%s", c.Epoch, c.Committed, ts(c.Stamp), ts(c.Frontier))
}
