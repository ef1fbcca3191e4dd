package broker

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDecodeIntents(t *testing.T) {
	meta := "m"
	commit := intentEntry{Op: opCommit, PID: 7, Epoch: 2, TxID: "app-1", Offsets: []groupOffset{{Group: "app", Topic: "in", Partition: 1, Offset: 40, LeaderEpoch: -1, Metadata: &meta}}}
	line := func(e intentEntry) string {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(b) + "\n"
	}
	for _, tc := range []struct {
		name    string
		raw     string
		pending []int64 // producer ids left pending
		err     string
	}{
		{name: "empty"},
		{name: "commit pending", raw: line(commit), pending: []int64{7}},
		{name: "commit done", raw: line(commit) + line(intentEntry{Op: opDone, PID: 7})},
		{name: "torn tail dropped", raw: line(commit) + `{"op":"do`, pending: []int64{7}},
		{name: "torn done leaves it pending", raw: line(commit) + strings.TrimSuffix(line(intentEntry{Op: opDone, PID: 7}), "\n"), pending: []int64{7}},
		{name: "corrupt middle line", raw: line(commit) + "garbage\n" + line(commit), err: "line 2: "},
		{name: "unknown op", raw: `{"op":"prepare","pid":1,"epoch":0}` + "\n", err: `line 1: unknown op "prepare"`},
		{name: "unknown field", raw: `{"op":"done","pid":1,"epoch":0,"x":1}` + "\n", err: "line 1: "},
		{name: "reproducing without its producer", raw: `{"op":"reproducing","pid":1,"epoch":0}` + "\n", err: "line 1: reproducing without the repair producer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := decodeIntents([]byte(tc.raw))
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to start with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			st := replayIntents(entries)
			if len(st.pending) != len(tc.pending) {
				t.Fatalf("pending = %v, want producer ids %v", st.pending, tc.pending)
			}
			for _, pid := range tc.pending {
				if _, ok := st.pending[pid]; !ok {
					t.Fatalf("pending = %v, want producer ids %v", st.pending, tc.pending)
				}
			}
		})
	}
}

// TestReproducingNamesTheRepair: the repair that copied an intent's
// records is remembered for that intent until the intent is done, and a
// new commit of the producer id replaces both.
func TestReproducingNamesTheRepair(t *testing.T) {
	by := producerRef{PID: 99, Epoch: 0}
	st := replayIntents([]intentEntry{
		{Op: opCommit, PID: 7, Epoch: 2},
		{Op: opReproducing, PID: 7, Epoch: 2, By: &by},
		{Op: opCommit, PID: 99, Epoch: 0},
	})
	if st.reproducing[7] != by || !st.committed[by] {
		t.Fatalf("state %+v: want producer 7 reproduced by %v, whose commit is logged", st, by)
	}
	st.apply(intentEntry{Op: opCommit, PID: 7, Epoch: 3})
	if _, ok := st.reproducing[7]; ok {
		t.Fatalf("a new commit of producer 7 kept the old repair: %+v", st)
	}
	// A reproducing entry for an epoch that is not the pending one is stale.
	st.apply(intentEntry{Op: opReproducing, PID: 7, Epoch: 2, By: &by})
	if _, ok := st.reproducing[7]; ok {
		t.Fatalf("a stale reproducing entry applied: %+v", st)
	}
}

// FuzzDecodeIntents: the log is bytes a killed process left behind;
// whatever they are, decoding returns entries or an error, and what it
// returns encodes back to lines it decodes the same.
func FuzzDecodeIntents(f *testing.F) {
	f.Add([]byte(`{"op":"commit","pid":7,"epoch":2,"txid":"a","offsets":[{"group":"g","topic":"t","partition":0,"offset":5,"leader_epoch":-1}]}` + "\n"))
	f.Add([]byte(`{"op":"done","pid":7,"epoch":0}` + "\n" + `{"op":"reproducing","pid":7,"epoch":2,"by":{"pid":9,"epoch":1}}`))
	f.Add([]byte("\n\n{}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		entries, err := decodeIntents(raw)
		if err != nil {
			return
		}
		var again bytes.Buffer
		for _, e := range entries {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			again.Write(b)
			again.WriteByte('\n')
		}
		back, err := decodeIntents(again.Bytes())
		if err != nil {
			t.Fatalf("re-encoded entries do not decode: %v", err)
		}
		if len(back) != len(entries) {
			t.Fatalf("%d entries decoded back as %d", len(entries), len(back))
		}
		_ = replayIntents(entries)
	})
}
