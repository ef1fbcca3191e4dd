package metrics

import "testing"

func TestCounterIdentity(t *testing.T) {
	r := NewRegistry()
	r.Counter(DroppedRecords, "reason", "late", "topic", "a").Add(2)
	r.Counter(DroppedRecords, "topic", "a", "reason", "late").Add(1)
	if got := r.Value(DroppedRecords, "reason", "late", "topic", "a"); got != 3 {
		t.Fatalf("value = %d, want 3", got)
	}
	want := `dropped.records.total{reason="late",topic="a"}`
	if names := r.Names(); len(names) != 1 || names[0] != want {
		t.Fatalf("names = %v, want [%s]", names, want)
	}
	if r.Value("missing") != 0 || len(r.Names()) != 1 {
		t.Fatal("Value must not create counters")
	}
}

func TestEachKeepsLabels(t *testing.T) {
	r := NewRegistry()
	r.Counter(DroppedRecords, "reason", ReasonLateWindow).Add(2)
	n := 0
	r.Each(func(l Labelled, v int64) {
		n++
		if l.Name != DroppedRecords || Label(l.Labels, "reason") != ReasonLateWindow || Label(l.Labels, "x") != "" || v != 2 {
			t.Fatalf("Each gave %+v %d", l, v)
		}
	})
	if n != 1 {
		t.Fatalf("Each visited %d counters, want 1", n)
	}
}
