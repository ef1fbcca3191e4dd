package migrate

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Side is one of the two outputs a shadow run compares.
type Side int

const (
	// KafkaStreams is the live Kafka Streams application's output.
	KafkaStreams Side = iota
	// Ours is our topology's, in the shadow topics.
	Ours
)

func (s Side) String() string {
	if s == Ours {
		return "ours"
	}
	return "kafka-streams"
}

// Verdict is what a comparison found for one key of one output topic.
type Verdict string

const (
	// Matched: both sides' latest values are equal.
	Matched Verdict = "matched"
	// WindowNotEmittedYet is the documented difference of windows emitted
	// on close: we emitted a window result Kafka Streams has not yet
	// emitted, and it has emitted no window as late in that partition. It
	// looks for closed windows at most once a second, when a record
	// arrives, so it may not have looked yet (docs/migration.md). The
	// other way round is no documented difference: at an aligned point our
	// engine has emitted every window its watermark closed, and a window
	// Kafka Streams emitted and we did not is OnlyKafkaStreams (a grace
	// or window of ours too long, a record ours dropped).
	WindowNotEmittedYet Verdict = "window-not-emitted-yet"
	// ValueDiffers: both sides wrote the key, the latest values differ.
	ValueDiffers Verdict = "value-differs"
	// OnlyKafkaStreams: Kafka Streams wrote the key since the shadow run
	// began, we did not (and it is not a window we have yet to close).
	OnlyKafkaStreams Verdict = "only-kafka-streams"
	// OnlyOurs: we wrote the key, Kafka Streams did not.
	OnlyOurs Verdict = "only-ours"
)

// Documented says whether a verdict is a documented difference: it does
// not fail a shadow run.
func (v Verdict) Documented() bool { return v == WindowNotEmittedYet }

// Unexpected says whether a verdict fails a shadow run.
func (v Verdict) Unexpected() bool {
	return v == ValueDiffers || v == OnlyKafkaStreams || v == OnlyOurs
}

// OutputRecord is one record of an output topic, as compared. Topic is
// the topic it was read from (ours: the shadow topic).
type OutputRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Key       []byte `json:"-"`
	Value     []byte `json:"-"`
	Timestamp int64  `json:"timestamp"`
	// KeyText and ValueText are the bytes as a reader sees them: the
	// string when it is printable UTF-8, else "0x" and hex (an 8-byte
	// value is a count or a sum: its number follows); a windowed key is
	// its inner key, "@" and its window's start (a session's end).
	KeyText   string `json:"key"`
	ValueText string `json:"value"`
}

// Difference is a key whose latest values differ at the last comparison,
// with the record each side last wrote for it (nil for a side that wrote
// none).
type Difference struct {
	Topic        string        `json:"topic"`
	Key          string        `json:"key"`
	Verdict      Verdict       `json:"verdict"`
	KafkaStreams *OutputRecord `json:"kafka_streams"`
	Ours         *OutputRecord `json:"ours"`
}

// Comparison counts the verdicts of one comparison point, or (in a
// report) of every key at its last comparison.
type Comparison struct {
	Compared   int             `json:"keys_compared"`
	Matched    int             `json:"matched"`
	Documented map[Verdict]int `json:"documented"`
	Unexpected int             `json:"unexpected"`
	// Deferred are keys written since the last point that were not
	// compared at this one: Kafka Streams had records of theirs in a
	// repartition topic, not yet processed. In a summary, the keys whose
	// latest records were never compared (a verdict they have, counted
	// above, is from an earlier point).
	Deferred int `json:"deferred"`
}

type outKey struct{ topic, key string }

type keyState struct {
	last    [2]*OutputRecord
	verdict Verdict
	// differed says the key was an unexpected difference at some point,
	// so that one matched at the end is reported as transient.
	differed bool
}

type topicPartition struct {
	topic     string
	partition int32
}

// Comparer compares, key by key, the output of Kafka Streams and ours at
// aligned points: when both sides have processed the same input (see
// Shadow and docs/decisions/0034-shadow-alignment.md). It is a pure state
// machine: the shadow run feeds it the records each side wrote up to an
// aligned point (Add) and then asks for the comparison at that point
// (Point). Only the latest record of each key is kept, per side.
type Comparer struct {
	// suffix is the window suffix of an output topic's keys (8 bytes for
	// a time window, 16 for a session), 0 when they are not windowed.
	suffix map[string]int
	keys   map[outKey]*keyState
	dirty  map[outKey]bool
	// frontier is, per side and output partition, the largest window
	// position (a time window's start, a session's end) written.
	frontier [2]map[topicPartition]int64
	points   int
}

// NewComparer compares the output topics of suffix, keyed by Kafka
// Streams' topic name, each with the length of its keys' window suffix
// (0 when its keys are not windowed).
func NewComparer(suffix map[string]int) *Comparer {
	return &Comparer{suffix: maps.Clone(suffix), keys: map[outKey]*keyState{}, dirty: map[outKey]bool{},
		frontier: [2]map[topicPartition]int64{{}, {}}}
}

// Add takes a record side wrote to the output topic topic (Kafka Streams'
// name for it), read before the point it is to be compared at.
func (c *Comparer) Add(side Side, topic string, r OutputRecord) {
	k := outKey{topic, string(r.Key)}
	st := c.keys[k]
	if st == nil {
		st = &keyState{}
		c.keys[k] = st
	}
	r.KeyText, r.ValueText = c.renderKey(topic, r.Key), render(r.Value)
	st.last[side] = &r
	c.dirty[k] = true
	if pos, ok := c.windowPosition(topic, r.Key); ok {
		tp := topicPartition{topic, r.Partition}
		if old, seen := c.frontier[side][tp]; !seen || pos > old {
			c.frontier[side][tp] = pos
		}
	}
}

// windowPosition is the position of a windowed key's window: the first 8
// bytes of its suffix.
func (c *Comparer) windowPosition(topic string, key []byte) (int64, bool) {
	n := c.suffix[topic]
	if n < 8 || len(key) < n {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(key[len(key)-n:])), true
}

// InnerKey is a key of topic without its window suffix.
func (c *Comparer) InnerKey(topic string, key []byte) []byte {
	if n := c.suffix[topic]; n > 0 && len(key) >= n {
		return key[:len(key)-n]
	}
	return key
}

// Point compares every key written since the last point, but for those
// deferred says to leave for a later one (given the topic and the key
// without its window suffix), and returns the counts.
func (c *Comparer) Point(deferred func(topic string, innerKey []byte) bool) Comparison {
	c.points++
	out := Comparison{Documented: map[Verdict]int{}}
	for k := range c.dirty {
		if deferred != nil && deferred(k.topic, c.InnerKey(k.topic, []byte(k.key))) {
			out.Deferred++
			continue
		}
		delete(c.dirty, k)
		st := c.keys[k]
		st.verdict = c.judge(k, st)
		if st.verdict.Unexpected() {
			st.differed = true
		}
		count(&out, st.verdict)
	}
	return out
}

func count(out *Comparison, v Verdict) {
	out.Compared++
	switch {
	case v == Matched:
		out.Matched++
	case v.Documented():
		out.Documented[v]++
	default:
		out.Unexpected++
	}
}

func (c *Comparer) judge(k outKey, st *keyState) Verdict {
	ks, ours := st.last[KafkaStreams], st.last[Ours]
	switch {
	case ks != nil && ours != nil:
		if bytes.Equal(ks.Value, ours.Value) {
			return Matched
		}
		return ValueDiffers
	case ks != nil:
		return OnlyKafkaStreams
	default:
		if c.notClosedBy(KafkaStreams, k.topic, ours) {
			return WindowNotEmittedYet
		}
		return OnlyOurs
	}
}

// AwaitingOurs counts the keys written since the last point that are a
// window Kafka Streams emitted and we have not: the last point waits for
// our output to stand still before it judges them.
func (c *Comparer) AwaitingOurs() int {
	n := 0
	for k := range c.dirty {
		st := c.keys[k]
		if _, windowed := c.windowPosition(k.topic, []byte(k.key)); windowed && st.last[KafkaStreams] != nil && st.last[Ours] == nil {
			n++
		}
	}
	return n
}

// notClosedBy says whether r, a window result of the other side, lies past
// every window side has written in r's partition: side has not closed it
// yet. A window at or before one side emitted later is one it closed, and
// its absence is a difference.
func (c *Comparer) notClosedBy(side Side, topic string, r *OutputRecord) bool {
	pos, ok := c.windowPosition(topic, r.Key)
	if !ok {
		return false
	}
	f, seen := c.frontier[side][topicPartition{topic, r.Partition}]
	return !seen || pos > f
}

// Summary counts every key by its verdict at its last comparison, and
// returns the unexpected differences (at most limit of them, in topic and
// key order; all with limit < 0) and the transient ones: keys unexpected
// at some point that match now.
func (c *Comparer) Summary(limit int) (Comparison, []Difference, int) {
	out := Comparison{Documented: map[Verdict]int{}}
	var diffs []Difference
	transient := 0
	for _, k := range slices.SortedFunc(maps.Keys(c.keys), func(a, b outKey) int {
		if n := strings.Compare(a.topic, b.topic); n != 0 {
			return n
		}
		return strings.Compare(a.key, b.key)
	}) {
		st := c.keys[k]
		if st.verdict == "" {
			out.Deferred++ // never compared
			continue
		}
		if c.dirty[k] {
			out.Deferred++ // compared before, written since and not again
		}
		count(&out, st.verdict)
		if st.verdict == Matched && st.differed {
			transient++
		}
		if st.verdict.Unexpected() && (limit < 0 || len(diffs) < limit) {
			diffs = append(diffs, Difference{Topic: k.topic, Key: c.renderKey(k.topic, []byte(k.key)), Verdict: st.verdict,
				KafkaStreams: st.last[KafkaStreams], Ours: st.last[Ours]})
		}
	}
	return out, diffs, transient
}

// renderKey shows a key of topic: a windowed one as its inner key, "@"
// and its window's position (a time window's start, a session's end), in
// milliseconds.
func (c *Comparer) renderKey(topic string, key []byte) string {
	if pos, ok := c.windowPosition(topic, key); ok {
		return render(c.InnerKey(topic, key)) + "@" + strconv.FormatInt(pos, 10)
	}
	return render(key)
}

// render shows bytes as a reader sees them: printable UTF-8 as is, else
// hex, and an 8-byte value (a long: a count, a sum) with its number.
func render(b []byte) string {
	if b == nil {
		return "null"
	}
	printable := utf8.Valid(b) && !bytes.ContainsFunc(b, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if printable {
		return string(b)
	}
	s := "0x" + hex.EncodeToString(b)
	if len(b) == 8 {
		s += " (" + strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10) + ")"
	}
	return s
}
