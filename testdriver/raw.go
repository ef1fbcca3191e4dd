package testdriver

import (
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
)

// RawRecord is a record as bytes, as it crosses a topic. A nil Key or
// Value is a null.
type RawRecord struct {
	Key       []byte
	Value     []byte
	Timestamp int64
	Headers   processor.Headers
}

// PipeRaw pipes a record whose key and value are already serialized, for
// callers that hold bytes rather than Go values (fixture replay, recorded
// traffic). It runs exactly what a typed pipe runs once it has serialized.
func (d *Driver) PipeRaw(topic string, r RawRecord) error {
	return d.pipe(task.Input{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: r.Headers})
}

// ReadRaw reads and consumes every unread record of topic, undecoded, in
// the order they were written; nil when there is none.
func (d *Driver) ReadRaw(topic string) []RawRecord {
	q := d.outputs[topic]
	if len(q) == 0 {
		return nil
	}
	out := make([]RawRecord, len(q))
	for i, o := range q {
		out[i] = RawRecord{Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Headers: o.Headers}
	}
	clear(q)
	d.outputs[topic] = q[:0]
	return out
}

// SkipRaw consumes every unread record of topic without copying it and
// returns how many there were: long replays call it on topics nobody
// reads (changelogs, boundaries) to keep memory flat.
func (d *Driver) SkipRaw(topic string) int {
	q := d.outputs[topic]
	clear(q)
	d.outputs[topic] = q[:0]
	return len(q)
}
