package topofile

import (
	"github.com/stoatflow/stoatctl/engine/internal/hop"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/serde"
)

// Entry implements hop.Taker: a values step that writes a string fast
// path's result to a String sink unboxed (valuesProc.str, set only then)
// also takes its records from a source before it that reads keys and
// values with the String serde, as the decoded strings themselves. From
// bytes to bytes nothing is then boxed: the path a Go topology's
// mapValues takes (docs/decisions/0023).
func (p *valuesProc[K]) Entry(keySerde, valueSerde serde.Any) (hop.Entry, bool) {
	if p.str == nil || !serde.IsString(keySerde) || !serde.IsString(valueSerde) {
		return nil, false
	}
	return &stringEntry[K]{p: p}, true
}

// stringEntry is the entry of a valuesProc: the record Decode decoded, as
// the String serde decodes it (a null stays null).
type stringEntry[K any] struct {
	p                  *valuesProc[K]
	key, value         string
	keyNull, valueNull bool
}

func (e *stringEntry[K]) Decode(_ string, key, value []byte) (bool, error) {
	e.keyNull, e.valueNull = key == nil, value == nil
	e.key, e.value = string(key), string(value)
	return false, nil
}

func (e *stringEntry[K]) SourceKey() (string, bool) { return e.key, !e.keyNull }

func (e *stringEntry[K]) Erased() (key, value any) {
	if !e.keyNull {
		key = e.key
	}
	if !e.valueNull {
		value = e.value
	}
	return key, value
}

// Process runs the fast path on the strings and writes its result; a
// record with a null runs as the erased path would have run it.
func (e *stringEntry[K]) Process(timestamp int64, headers processor.Headers) error {
	p := e.p
	if !e.keyNull && !e.valueNull {
		p.ev.in = fastIn{typed: true, keyString: e.key, valString: e.value}
		if s, ok := p.str(&p.ev.in); ok {
			if k, passed, ok := sendKeyString(p.sink, e.key, timestamp); ok {
				p.sink.Send(k, passed, []byte(s), timestamp, headers)
			}
			return nil
		}
	}
	k, v := e.Erased()
	key, _ := k.(K)
	return p.Process(processor.Record[K, any]{Key: key, Value: v, Timestamp: timestamp, Headers: headers})
}

// sendKeyString is sendKey for a key that is a string.
func sendKeyString(t *hop.Target, key string, timestamp int64) (k []byte, passed, ok bool) {
	if t.Failed() || !t.Stamp(timestamp) {
		return nil, false, false
	}
	if k, passed = t.PassKey(key); passed {
		return k, true, true
	}
	k, err := t.KeySerde.SerializeAny(t.Topic, key)
	if err != nil {
		t.KeyFailed(err)
		return nil, false, false
	}
	return k, false, true
}
