package inspect

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestWatermarksJSON holds the wire form: a time that does not exist yet
// is null, nothing past 2^53 is written, and reading gives back what was
// written, every field of both documents included (a field added to
// PartitionWatermark and not to its wire form fails here).
func TestWatermarksJSON(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	str := func(s string) *string { return &s }
	full := PartitionWatermark{WatermarkMs: 10, WatermarkIso: "a", Idle: true, LastEventTimeMs: 11, LastEventTimeIso: "b",
		LastRecordMs: ptr(12), LastAdvanceMs: ptr(13), IdleSinceMs: ptr(14), WaitingSinceMs: ptr(19), SinceAdvanceMs: ptr(20), PreviewWatermarkMs: ptr(15), PreviewWatermarkIso: str("c"),
		HeadHeldSinceMs: ptr(16), AlignmentGroup: str("g"), AlignmentHeld: true, DriftFromGroupMinMs: 17, IdlenessTimeoutMs: 18,
		Writers: &RepartitionWriters{Tasks: []string{"0_0", "0_1"}, NotTold: []string{"0_1"}, Idle: []string{}, Holding: []string{"0_0"}}}
	v := reflect.ValueOf(full)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves %s unset", v.Type().Field(i).Name)
		}
	}
	for _, w := range []Watermarks{
		{GlobalMs: 5, GlobalIso: "x", AlignmentGroupMins: map[string]int64{"g": 3}, AlignmentBinding: str("g"), Partitions: map[string]PartitionWatermark{"t:0": full}},
		{GlobalMs: MinWatermark, GlobalIso: NotAvailable, AlignmentGroupMins: map[string]int64{},
			Partitions: map[string]PartitionWatermark{"t:0": {WatermarkMs: MinWatermark, LastEventTimeMs: MinWatermark}}},
	} {
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "9223372036854775808") {
			t.Errorf("a sentinel past 2^53: %s", b)
		}
		var back Watermarks
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, w) {
			t.Errorf("round trip\n%+v\nwant\n%+v\n(%s)", back, w, b)
		}
	}
	b, _ := json.Marshal(Watermarks{GlobalMs: MinWatermark})
	if !strings.Contains(string(b), `"globalMs":null`) {
		t.Errorf("before the first watermark: %s", b)
	}
}

// TestMillis: a script's document writes a time that does not exist yet
// as null in JSON and YAML, and reads null back as MinWatermark.
func TestMillis(t *testing.T) {
	type doc struct {
		At Millis `json:"at" yaml:"at"`
	}
	for _, tc := range []struct {
		in         Millis
		json, yaml string
	}{
		{Millis(MinWatermark), `{"at":null}`, "at: null\n"},
		{1_790_071_560_000, `{"at":1790071560000}`, "at: 1790071560000\n"},
		{-1, `{"at":-1}`, "at: -1\n"},
	} {
		b, err := json.Marshal(doc{tc.in})
		if err != nil || string(b) != tc.json {
			t.Errorf("%d: json %s, %v; want %s", tc.in, b, err, tc.json)
		}
		var back doc
		if err := json.Unmarshal(b, &back); err != nil || back.At != tc.in {
			t.Errorf("%s: read %d, %v", b, back.At, err)
		}
		y, err := yaml.Marshal(doc{tc.in})
		if err != nil || string(y) != tc.yaml {
			t.Errorf("%d: yaml %q, %v; want %q", tc.in, y, err, tc.yaml)
		}
	}
}
