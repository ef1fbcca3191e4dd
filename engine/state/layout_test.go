package state

import (
	"bytes"
	"errors"
	"testing"
)

func TestEncodeValueAndTimestamp(t *testing.T) {
	tests := []struct {
		name  string
		value []byte
		ts    int64
		want  []byte
	}{
		{"int64 value", []byte{0, 0, 0, 0, 0, 0, 0, 2}, 42,
			[]byte{0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 2}},
		{"empty value keeps its header", []byte{}, 1, []byte{0, 0, 0, 0, 0, 0, 0, 1}},
		{"negative timestamp is two's complement", []byte("x"), -1,
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 'x'}},
		{"big-endian timestamp", []byte("ab"), 0x0102030405060708,
			[]byte{1, 2, 3, 4, 5, 6, 7, 8, 'a', 'b'}},
		{"nil stays a tombstone", nil, 42, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EncodeValueAndTimestamp(tt.value, tt.ts)
			if !bytes.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("EncodeValueAndTimestamp(%x, %d) = %x, want %x", tt.value, tt.ts, got, tt.want)
			}
		})
	}
}

func TestDecodeValueAndTimestamp(t *testing.T) {
	tests := []struct {
		name      string
		in        []byte
		wantValue []byte
		wantTS    int64
		wantErr   bool
	}{
		{"int64 value", []byte{0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 2},
			[]byte{0, 0, 0, 0, 0, 0, 0, 2}, 42, false},
		{"header only is an empty value", []byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte{}, 1, false},
		{"negative timestamp", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 'x'}, []byte("x"), -2, false},
		{"nil is a tombstone", nil, nil, 0, false},
		{"empty is short", []byte{}, nil, 0, true},
		{"seven bytes is short", []byte{0, 0, 0, 0, 0, 0, 0}, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			value, ts, err := DecodeValueAndTimestamp(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrValueTooShort) {
					t.Fatalf("err = %v, want ErrValueTooShort", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(value, tt.wantValue) || (value == nil) != (tt.wantValue == nil) || ts != tt.wantTS {
				t.Fatalf("got (%x, %d), want (%x, %d)", value, ts, tt.wantValue, tt.wantTS)
			}
		})
	}
}

func FuzzDecodeValueAndTimestamp(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{1, 2, 3})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		value, ts, err := DecodeValueAndTimestamp(b)
		if err != nil {
			if len(b) >= timestampSize || b == nil {
				t.Fatalf("decode %x: unexpected error %v", b, err)
			}
			return
		}
		if b != nil && len(b) < timestampSize {
			t.Fatalf("decode %x: want error for short input", b)
		}
		// Decoding must be the exact inverse of encoding.
		if got := EncodeValueAndTimestamp(value, ts); !bytes.Equal(got, b) {
			t.Fatalf("re-encode of %x gave %x", b, got)
		}
	})
}
