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
