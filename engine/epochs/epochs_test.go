package epochs_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/stoatflow/stoatctl/engine/epochs"
)

// TestBook runs the scripts in testdata/. Each drives one book through a
// generation's hand-overs and prints what it answers and where it stands.
// Rewrite the expected output with: go test ./engine/epochs -rewrite
//
// Commands:
//
//	book lanes=N [next=E]           a fresh book: N lanes, producing epoch E (1)
//	report lane=L epoch=E [outs=a,b] [credit=C] [final] [times=p:t,...]
//	                                a lane's report; final with its event times
//	cut epoch=E stamp=S             the dispatcher cut epoch E's barrier
//	ready                           can the epoch being produced end?
//	committed                       it ended in a commit: move on
//	drop                            an abort or unknown outcome: forget it all
//	end [rebalanced] [produce=ok|failed|fatal] ended=committed|aborted|failed|fatal|unstored [still-open]
//	                                how the epoch ends, and the verdict
func TestBook(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var b *epochs.Book[[]string, int64, string]
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			var out strings.Builder
			switch d.Cmd {
			case "book":
				next := int64(1)
				if d.HasArg("next") {
					next = int64(intArg(t, d, "next"))
				}
				b = epochs.New[[]string, int64, string](intArg(t, d, "lanes"), next)
			case "report":
				r := epochs.Report[[]string, string]{Lane: intArg(t, d, "lane"), Epoch: int64(intArg(t, d, "epoch")), Final: d.HasArg("final")}
				if d.HasArg("outs") {
					r.Outs = strings.Split(strArg(t, d, "outs"), ",")
				}
				r.Empty = len(r.Outs) == 0
				if d.HasArg("credit") {
					r.Credit = int64(intArg(t, d, "credit"))
				}
				if d.HasArg("times") {
					r.PartTimes = map[string]int64{}
					for _, pt := range strings.Split(strArg(t, d, "times"), ",") {
						p, ts, _ := strings.Cut(pt, ":")
						n, err := strconv.ParseInt(ts, 10, 64)
						if err != nil {
							d.Fatalf(t, "times %q: %v", pt, err)
						}
						r.PartTimes[p] = n
					}
				}
				produce, ok, give, err := b.Report(r)
				switch {
				case err != nil:
					fmt.Fprintf(&out, "error: %v\n", err)
				case ok && !r.Empty:
					fmt.Fprintf(&out, "produce %v, give back %d\n", produce, give)
				case r.Empty:
					fmt.Fprintf(&out, "nothing to produce\n")
				default:
					fmt.Fprintf(&out, "held\n")
				}
			case "cut":
				if err := b.Cut(int64(intArg(t, d, "epoch")), int64(intArg(t, d, "stamp"))); err != nil {
					fmt.Fprintf(&out, "error: %v\n", err)
				}
			case "ready":
				if e, ok := b.Ready(); ok {
					fmt.Fprintf(&out, "epoch %d ends: stamp %d, event times %s\n", e.N, e.Cut, times(e.PartTimes))
				} else {
					fmt.Fprintf(&out, "epoch %d cannot end yet\n", b.Next())
				}
			case "committed":
				release, give := b.Committed()
				fmt.Fprintf(&out, "release %v, give back %d\n", release, give)
			case "drop":
				give, n, chunks := b.Drop()
				fmt.Fprintf(&out, "dropped %d epochs, %d held chunks, give back %d\n", n, chunks, give)
			case "end":
				e := epochs.End{Rebalanced: d.HasArg("rebalanced")}
				if d.HasArg("produce") {
					switch p := strArg(t, d, "produce"); p {
					case "ok":
					case "failed":
						e.ProduceFailed = true
					case "fatal":
						e.ProduceFailed, e.ProduceFatal = true, true
					default:
						d.Fatalf(t, "produce=%s", p)
					}
				}
				var got epochs.Ended
				switch en := strArg(t, d, "ended"); en {
				case "committed":
					got.Committed = true
				case "aborted":
				case "failed":
					got.Failed = true
				case "fatal":
					got.Failed, got.FailedFatal = true, true
				case "unstored":
					got.Failed, got.AbortedUnstored = true, true
				default:
					d.Fatalf(t, "ended=%s", en)
				}
				got.StillOpen = d.HasArg("still-open")
				try := "abort"
				if e.Try() {
					try = "commit"
				}
				o, why := epochs.Decide(e, got)
				fmt.Fprintf(&out, "try %s: %s", try, o)
				if why != "" {
					fmt.Fprintf(&out, " (%s)", why)
				}
				out.WriteString("\n")
				return out.String()
			default:
				d.Fatalf(t, "unknown command %s", d.Cmd)
			}
			fmt.Fprintf(&out, "book: producing epoch %d\n", b.Next())
			return out.String()
		})
	})
}

func times(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func intArg(t *testing.T, d *datadriven.TestData, key string) int {
	var v int
	d.ScanArgs(t, key, &v)
	return v
}

func strArg(t *testing.T, d *datadriven.TestData, key string) string {
	var v string
	d.ScanArgs(t, key, &v)
	return v
}
