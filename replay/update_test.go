package replay

import (
	"bytes"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestWriteExpectMatchesTheTree holds the streamed expect section to the
// layout of the YAML tree expectNode builds, which the encoder lays out
// itself: every output form, stores and drops.
func TestWriteExpectMatchesTheTree(t *testing.T) {
	acts := []Actual{
		{Key: "a", Value: "x: y", Timestamp: 1, HasTimestamp: true, Step: 1, Index: 1},
		{Key: map[string]any{"key": "p", "start": int64(0), "end": int64(60)}, Value: int64(3), Timestamp: 2, HasTimestamp: true, Step: 2, Index: 2},
		{Key: nil, Value: []any{"l", 1.5, true}, Timestamp: 3, HasTimestamp: true, Step: 2, Index: 3},
		{Key: "multi\nline", Value: "  lead", Timestamp: 4, HasTimestamp: true, Step: 1, Index: 4},
	}
	f := &Fixture{Steps: []Step{{Index: 1, Label: "first"}, {Index: 2}}}
	r := &Result{fixture: f,
		Outputs: []*TopicResult{
			{Topic: "in-order", Actual: acts, ActualCount: 4, Order: InOrder},
			{Topic: "timed", Actual: acts, ActualCount: 4, Order: InOrder, Expected: []ExpectedRecord{{After: 1}}},
			{Topic: "per key: odd name", Actual: acts, ActualCount: 4, Order: PerKey},
			{Topic: "empty", ActualCount: 0, Order: InOrder},
			{Topic: "empty-multiset", ActualCount: 0, Order: Multiset},
			{Topic: "counted", CountOnly: true, ActualCount: 7},
		},
		Stores: []*StoreResult{{Store: "s", Actual: []Actual{{Key: "k", Value: int64(1)}}}, {Store: "none"}},
		Drops:  &DropsResult{Expected: map[string]int64{"late_window": 0}, Actual: map[string]int64{"late_window": 2}, Reasons: []string{"late_window"}},
	}
	for _, opts := range []UpdateOptions{{}, {Timing: true}, {Counts: true}, {CountAbove: 3}} {
		want, err := encodeNode(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("expect"), r.expectNode(opts)}})
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := r.writeExpect(&got, opts); err != nil {
			t.Fatal(err)
		}
		if got.String() != string(want) {
			t.Errorf("%+v: streamed section\n%s\nwant, as the tree encodes it,\n%s", opts, got.String(), want)
		}
	}
	none := &Result{fixture: f}
	var got bytes.Buffer
	if err := none.writeExpect(&got, UpdateOptions{}); err != nil || got.String() != "expect:\n  outputs: {}\n" {
		t.Errorf("no outputs: %q, %v", got.String(), err)
	}
}
