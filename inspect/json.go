package inspect

import (
	"encoding/json"
	"strconv"
)

// This file writes the watermark documents' epoch-millisecond times as
// JSON a JavaScript reader takes as it is: a time that does not exist yet
// (MinWatermark, Java's Long.MIN_VALUE) is null, never
// -9223372036854775808, which a float64 cannot hold. Any value past
// ±2^53 is null for the same reason. Go keeps MinWatermark: reading null
// gives it back, so Go callers compare with MinWatermark as before.

// maxSafe is the largest integer a float64 holds exactly (2^53).
const maxSafe = 1 << 53

// safe is v as JSON: nil (null) outside ±2^53.
func safe(v int64) *int64 {
	if v < -maxSafe || v > maxSafe {
		return nil
	}
	return &v
}

// orMin is a read time: MinWatermark for null.
func orMin(v *int64) int64 {
	if v == nil {
		return MinWatermark
	}
	return *v
}

// watermarksJSON is Watermarks on the wire, fields in the same order.
type watermarksJSON struct {
	GlobalMs           *int64                        `json:"globalMs"`
	GlobalIso          string                        `json:"globalIso"`
	AlignmentGroupMins map[string]*int64             `json:"alignmentGroupMins"`
	AlignmentBinding   *string                       `json:"alignmentBinding"`
	Partitions         map[string]PartitionWatermark `json:"partitions"`
}

// MarshalJSON writes GlobalMs and the group minimums as null before there
// is one.
func (w Watermarks) MarshalJSON() ([]byte, error) {
	j := watermarksJSON{GlobalMs: safe(w.GlobalMs), GlobalIso: w.GlobalIso, AlignmentBinding: w.AlignmentBinding, Partitions: w.Partitions}
	if w.AlignmentGroupMins != nil {
		j.AlignmentGroupMins = make(map[string]*int64, len(w.AlignmentGroupMins))
		for g, v := range w.AlignmentGroupMins {
			j.AlignmentGroupMins[g] = safe(v)
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads null as MinWatermark.
func (w *Watermarks) UnmarshalJSON(b []byte) error {
	var j watermarksJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*w = Watermarks{GlobalMs: orMin(j.GlobalMs), GlobalIso: j.GlobalIso, AlignmentBinding: j.AlignmentBinding, Partitions: j.Partitions}
	if j.AlignmentGroupMins != nil {
		w.AlignmentGroupMins = make(map[string]int64, len(j.AlignmentGroupMins))
		for g, v := range j.AlignmentGroupMins {
			w.AlignmentGroupMins[g] = orMin(v)
		}
	}
	return nil
}

// partitionJSON is PartitionWatermark on the wire, fields in the same
// order.
type partitionJSON struct {
	WatermarkMs         *int64              `json:"watermarkMs"`
	WatermarkIso        string              `json:"watermarkIso"`
	Idle                bool                `json:"idle"`
	LastEventTimeMs     *int64              `json:"lastEventTimeMs"`
	LastEventTimeIso    string              `json:"lastEventTimeIso"`
	LastRecordMs        *int64              `json:"lastRecordMs,omitempty"`
	LastAdvanceMs       *int64              `json:"lastAdvanceMs,omitempty"`
	IdleSinceMs         *int64              `json:"idleSinceMs,omitempty"`
	WaitingSinceMs      *int64              `json:"waitingSinceMs,omitempty"`
	SinceAdvanceMs      *int64              `json:"sinceAdvanceMs,omitempty"`
	PreviewWatermarkMs  *int64              `json:"previewWatermarkMs,omitempty"`
	PreviewWatermarkIso *string             `json:"previewWatermarkIso,omitempty"`
	HeadHeldSinceMs     *int64              `json:"headHeldSinceMs,omitempty"`
	AlignmentGroup      *string             `json:"alignmentGroup"`
	AlignmentHeld       bool                `json:"alignmentHeld"`
	DriftFromGroupMinMs *int64              `json:"driftFromGroupMinMs"`
	IdlenessTimeoutMs   int64               `json:"idlenessTimeoutMs"`
	Writers             *RepartitionWriters `json:"writers,omitempty"`
}

// MarshalJSON writes the watermark and the last event time as null
// before the first.
func (p PartitionWatermark) MarshalJSON() ([]byte, error) {
	return json.Marshal(partitionJSON{WatermarkMs: safe(p.WatermarkMs), WatermarkIso: p.WatermarkIso, Idle: p.Idle,
		LastEventTimeMs: safe(p.LastEventTimeMs), LastEventTimeIso: p.LastEventTimeIso, LastRecordMs: p.LastRecordMs,
		LastAdvanceMs: p.LastAdvanceMs, IdleSinceMs: p.IdleSinceMs, WaitingSinceMs: p.WaitingSinceMs, SinceAdvanceMs: p.SinceAdvanceMs,
		PreviewWatermarkMs:  p.PreviewWatermarkMs,
		PreviewWatermarkIso: p.PreviewWatermarkIso, HeadHeldSinceMs: p.HeadHeldSinceMs, AlignmentGroup: p.AlignmentGroup,
		AlignmentHeld: p.AlignmentHeld, DriftFromGroupMinMs: safe(p.DriftFromGroupMinMs), IdlenessTimeoutMs: p.IdlenessTimeoutMs, Writers: p.Writers})
}

// UnmarshalJSON reads null as MinWatermark (a drift as 0).
func (p *PartitionWatermark) UnmarshalJSON(b []byte) error {
	var j partitionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = PartitionWatermark{WatermarkMs: orMin(j.WatermarkMs), WatermarkIso: j.WatermarkIso, Idle: j.Idle,
		LastEventTimeMs: orMin(j.LastEventTimeMs), LastEventTimeIso: j.LastEventTimeIso, LastRecordMs: j.LastRecordMs,
		LastAdvanceMs: j.LastAdvanceMs, IdleSinceMs: j.IdleSinceMs, WaitingSinceMs: j.WaitingSinceMs, SinceAdvanceMs: j.SinceAdvanceMs,
		PreviewWatermarkMs:  j.PreviewWatermarkMs,
		PreviewWatermarkIso: j.PreviewWatermarkIso, HeadHeldSinceMs: j.HeadHeldSinceMs, AlignmentGroup: j.AlignmentGroup,
		AlignmentHeld: j.AlignmentHeld, IdlenessTimeoutMs: j.IdlenessTimeoutMs, Writers: j.Writers}
	if j.DriftFromGroupMinMs != nil {
		p.DriftFromGroupMinMs = *j.DriftFromGroupMinMs
	}
	return nil
}

// Millis is an epoch-millisecond time in a document written for scripts
// (watch --once -o json|yaml): MinWatermark, or anything past ±2^53, is
// written as null and null is read as MinWatermark, as in the REST
// documents above.
type Millis int64

// MarshalJSON writes m, or null.
func (m Millis) MarshalJSON() ([]byte, error) {
	if p := safe(int64(m)); p != nil {
		return strconv.AppendInt(nil, *p, 10), nil
	}
	return []byte("null"), nil
}

// UnmarshalJSON reads a number, or null as MinWatermark.
func (m *Millis) UnmarshalJSON(b []byte) error {
	var v *int64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Millis(orMin(v))
	return nil
}

// MarshalYAML writes m, or null.
func (m Millis) MarshalYAML() (any, error) {
	if p := safe(int64(m)); p != nil {
		return *p, nil
	}
	return nil, nil
}
