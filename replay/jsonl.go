package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/stoatflow/stoatctl/engine/processor"
)

// recordsFile reads a JSON Lines records file: one JSON object per line
// with the fields of a record step. Blank lines are skipped. The object is
// scanned by hand rather than with encoding/json because replay of a large
// file spends most of its parsing time here, and the fields are flat.
type recordsFile struct {
	path string
	r    *bufio.Reader
	line int
	// topic interns the last topic, since consecutive records usually
	// share one.
	topic string
}

func openRecords(path string) (*recordsFile, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("records file: %w", err)
	}
	return newRecordsFile(path, f), f, nil
}

func newRecordsFile(path string, r io.Reader) *recordsFile {
	return &recordsFile{path: path, r: bufio.NewReaderSize(r, 1<<16)}
}

// next reads the next record into rec; io.EOF at the end.
func (f *recordsFile) next(rec *Record) error {
	for {
		line, err := f.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A long line: gather it whole.
			buf := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = f.r.ReadSlice('\n')
				buf = append(buf, line...)
			}
			line = buf
		}
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return io.EOF
			}
			return fmt.Errorf("read records file %s: %w", f.path, err)
		}
		f.line++
		if len(bytes.TrimSpace(line)) == 0 {
			if err != nil {
				return io.EOF
			}
			continue
		}
		return f.parse(line, rec)
	}
}

func (f *recordsFile) errf(col int, format string, args ...any) error {
	return &Error{File: f.path, Line: f.line, Column: col, Err: fmt.Errorf(format, args...)}
}

func (f *recordsFile) parse(line []byte, rec *Record) error {
	*rec = Record{}
	var seen [5]bool
	err := scanObject(line, func(key []byte, at int, val []byte) error {
		var i int
		switch string(key) {
		case "topic":
			if val[0] != '"' {
				return f.errf(at, "topic: want a string")
			}
			s, err := jsonString(val)
			if err != nil || s == "" {
				return f.errf(at, "topic: want a topic name")
			}
			if s != f.topic {
				f.topic = s
			}
			rec.Topic = f.topic
		case "key", "value":
			i = 1
			v, err := jsonValue(val)
			if err != nil {
				return f.errf(at, "%s: %v", key, err)
			}
			if key[0] == 'k' {
				rec.Key = v
			} else {
				i = 2
				rec.Value = v
			}
		case "timestamp":
			i = 3
			var err error
			if val[0] == '"' {
				var s string
				if s, err = jsonString(val); err == nil {
					rec.Timestamp, err = parseTime(s)
				}
			} else if rec.Timestamp, err = strconv.ParseInt(string(val), 10, 64); err != nil {
				err = fmt.Errorf("want epoch milliseconds or an RFC 3339 time, got %s", clip(string(val)))
			}
			if err != nil {
				return f.errf(at, "timestamp: %v", err)
			}
			rec.HasTimestamp = true
		case "headers":
			i = 4
			hs := processor.Headers{}
			if val[0] != '{' {
				return f.errf(at, "headers: want an object of strings")
			}
			err := scanObject(val, func(k []byte, _ int, v []byte) error {
				h := processor.Header{Key: string(k)}
				if v[0] == '"' {
					s, err := jsonString(v)
					if err != nil {
						return err
					}
					h.Value = []byte(s)
				} else if string(v) != "null" {
					return fmt.Errorf("header %s: want a string or null", k)
				}
				hs = append(hs, h)
				return nil
			})
			if err != nil {
				return f.errf(at, "headers: %v", err)
			}
			rec.Headers = hs
		default:
			return f.errf(at, "unknown field %q (want topic, key, value, timestamp, headers)", key)
		}
		if seen[i] {
			return f.errf(at, "field %q given twice", key)
		}
		seen[i] = true
		return nil
	})
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return err
		}
		return f.errf(0, "%v", err)
	}
	if rec.Topic == "" {
		return f.errf(0, "a record needs a topic")
	}
	return nil
}

// jsonValue turns one JSON token into a fixture value.
func jsonValue(tok []byte) (Value, error) {
	switch tok[0] {
	case '"':
		s, err := jsonString(tok)
		return Value{Kind: String, Text: s}, err
	case '{', '[':
		if !json.Valid(tok) {
			return Value{}, errors.New("invalid JSON")
		}
		return Value{Kind: Compound, Raw: bytes.Clone(tok)}, nil
	case 'n':
		if string(tok) == "null" {
			return Value{Kind: Null}, nil
		}
	case 't', 'f':
		if s := string(tok); s == "true" || s == "false" {
			return Value{Kind: Bool, Text: s}, nil
		}
	default:
		if isNumber(tok) {
			return Value{Kind: Number, Text: string(tok)}, nil
		}
	}
	return Value{}, fmt.Errorf("invalid JSON value %s", clip(string(tok)))
}

// jsonString decodes a JSON string token; the common case, without
// escapes, needs only a copy.
func jsonString(tok []byte) (string, error) {
	if len(tok) >= 2 && tok[0] == '"' && tok[len(tok)-1] == '"' && bytes.IndexByte(tok[1:len(tok)-1], '\\') < 0 && bytes.IndexByte(tok[1:len(tok)-1], '"') < 0 {
		for _, c := range tok[1 : len(tok)-1] {
			if c < 0x20 {
				return "", errors.New("control character in string")
			}
		}
		return string(tok[1 : len(tok)-1]), nil
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", fmt.Errorf("invalid JSON string %s", clip(string(tok)))
	}
	return s, nil
}

// isNumber reports whether tok is a JSON number.
func isNumber(tok []byte) bool {
	i := 0
	if i < len(tok) && tok[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(tok) && tok[i] >= '0' && tok[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && tok[start] == '0') {
		return false
	}
	if i < len(tok) && tok[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(tok) && (tok[i] == 'e' || tok[i] == 'E') {
		i++
		if i < len(tok) && (tok[i] == '+' || tok[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(tok)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// scanObject walks the fields of the JSON object in data, calling fn with
// each decoded key, the 1-based column of the key and the raw value
// token. Nested values are delimited, not validated; jsonValue does that.
func scanObject(data []byte, fn func(key []byte, col int, val []byte) error) error {
	i := 0
	skip := func() {
		for i < len(data) && isSpace(data[i]) {
			i++
		}
	}
	skip()
	if i >= len(data) || data[i] != '{' {
		return errors.New("want a JSON object")
	}
	i++
	skip()
	if i < len(data) && data[i] == '}' {
		i++
		skip()
		if i != len(data) {
			return fmt.Errorf("column %d: data after the object", i+1)
		}
		return nil
	}
	for {
		skip()
		col := i + 1
		if i >= len(data) || data[i] != '"' {
			return fmt.Errorf("column %d: want a field name", col)
		}
		end, err := stringEnd(data, i)
		if err != nil {
			return fmt.Errorf("column %d: %w", col, err)
		}
		key := data[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			s, err := jsonString(data[i:end])
			if err != nil {
				return fmt.Errorf("column %d: %w", col, err)
			}
			key = []byte(s)
		}
		i = end
		skip()
		if i >= len(data) || data[i] != ':' {
			return fmt.Errorf("column %d: want ':' after field name", i+1)
		}
		i++
		skip()
		vstart := i
		if i >= len(data) {
			return fmt.Errorf("column %d: want a value", i+1)
		}
		if i, err = valueEnd(data, i); err != nil {
			return fmt.Errorf("column %d: %w", vstart+1, err)
		}
		if err := fn(key, col, data[vstart:i]); err != nil {
			return err
		}
		skip()
		if i >= len(data) {
			return errors.New("unterminated object")
		}
		if data[i] == ',' {
			i++
			continue
		}
		if data[i] != '}' {
			return fmt.Errorf("column %d: want ',' or '}'", i+1)
		}
		i++
		skip()
		if i != len(data) {
			return fmt.Errorf("column %d: data after the object", i+1)
		}
		return nil
	}
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// valueEnd returns the index just past the value starting at data[i].
func valueEnd(data []byte, i int) (int, error) {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				e, err := stringEnd(data, j)
				if err != nil {
					return 0, err
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, errors.New("unterminated object or list")
	}
	j := i
	for j < len(data) && !isSpace(data[j]) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
		j++
	}
	if j == i {
		return 0, errors.New("want a value")
	}
	return j, nil
}
