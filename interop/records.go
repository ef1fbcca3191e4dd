package interop

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Record is one record of a JSON Lines file: the runner's input and output
// format, and our records-file format (docs/fixtures.md). Key and Value are
// decoded JSON: a string, a number (float64 when read from a file), a
// windowed key {key, start, end}, or nil for null.
type Record struct {
	Topic     string `json:"topic"`
	Key       any    `json:"key"`
	Value     any    `json:"value"`
	Timestamp int64  `json:"timestamp"`
}

// ReadFile reads a JSON Lines file of records; blank lines are skipped.
func ReadFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadRecords(path, f)
}

// WriteFile writes recs to path as a JSON Lines file, one record a line,
// the form ReadFile reads and the runner takes as input.
func WriteFile(path string, recs []Record) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// ReadRecords reads JSON Lines records from r; name is used in errors.
func ReadRecords(name string, r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(b, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// Decode turns a record's key and value bytes, as a sink of out wrote
// them, into the values a JSON Lines record holds.
func (out Output) Decode(key, value []byte) (any, any, error) {
	k, err := decode(out.Key, key, out.WindowSize)
	if err != nil {
		return nil, nil, fmt.Errorf("%s key %x: %w", out.Topic, key, err)
	}
	v, err := decode(out.Value, value, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("%s value %x: %w", out.Topic, value, err)
	}
	return k, v, nil
}

func decode(l Layout, b []byte, size int64) (any, error) {
	if b == nil {
		return nil, nil
	}
	switch l {
	case String:
		return string(b), nil
	case Long:
		if len(b) != 8 {
			return nil, fmt.Errorf("a long needs 8 bytes, got %d", len(b))
		}
		return float64(int64(binary.BigEndian.Uint64(b))), nil
	case TimeWindowed:
		if len(b) < 8 {
			return nil, fmt.Errorf("a time-windowed key needs 8 bytes or more, got %d", len(b))
		}
		start := int64(binary.BigEndian.Uint64(b[len(b)-8:]))
		return window(string(b[:len(b)-8]), start, start+size), nil
	case SessionWindowed:
		if len(b) < 16 {
			return nil, fmt.Errorf("a session-windowed key needs 16 bytes or more, got %d", len(b))
		}
		n := len(b) - 16
		end := int64(binary.BigEndian.Uint64(b[n : n+8]))
		start := int64(binary.BigEndian.Uint64(b[n+8:]))
		return window(string(b[:n]), start, end), nil
	}
	return nil, fmt.Errorf("unknown layout %q", l)
}

// window is a windowed key as the runner prints it, with numbers as JSON
// decoding gives them, so that both compare equal.
func window(key string, start, end int64) map[string]any {
	return map[string]any{"key": key, "start": float64(start), "end": float64(end)}
}

// Canonical is a record's key (or value) as canonical JSON, for comparing
// and grouping: maps marshal with sorted keys.
func Canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("!%v", err)
	}
	return string(b)
}

// PerKey groups records by topic and key, keeping each key's order: the
// order that every system here guarantees, whatever the partitioning,
// lanes or threads. Each entry is "value@timestamp".
func PerKey(recs []Record) map[string][]string {
	out := map[string][]string{}
	for _, r := range recs {
		k := r.Topic + " " + Canonical(r.Key)
		out[k] = append(out[k], fmt.Sprintf("%s@%d", Canonical(r.Value), r.Timestamp))
	}
	return out
}
