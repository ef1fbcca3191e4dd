package serde_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stoatflow/stoatctl/engine/serde"
)

func TestDecodeErrorMessage(t *testing.T) {
	base := &serde.DecodeError{Serde: "int64", Topic: "orders", Err: errors.New("size of data is 3, expected 8")}
	tests := []struct {
		name string
		err  *serde.DecodeError
		want string
	}{
		{"positioned", base.At("orders", 2, 17), "deserialize with serde int64: topic orders partition 2 offset 17: size of data is 3, expected 8"},
		{"topic only", base, "deserialize with serde int64: topic orders: size of data is 3, expected 8"},
		{"bare", &serde.DecodeError{Serde: "int64", Err: io.EOF}, "deserialize with serde int64: EOF"},
		{"no serde", &serde.DecodeError{Err: io.EOF}, "deserialize: EOF"},
		{"positioned at zero", base.At("t", 0, 0), "deserialize with serde int64: topic t partition 0 offset 0: size of data is 3, expected 8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q\nwant      %q", got, tt.want)
			}
		})
	}
	if base.Positioned {
		t.Error("At must not change the receiver")
	}
	if (*serde.DecodeError)(nil).At("t", 1, 2) != nil {
		t.Error("At on a nil *DecodeError must be nil")
	}
}

func TestDecodeErrorFromSerde(t *testing.T) {
	_, err := serde.Int64().Deserialize("orders", []byte{1, 2, 3})
	perr := serde.Positioned(err, "orders", 2, 17)
	const want = "deserialize with serde int64: topic orders partition 2 offset 17: size of data is 3, expected 8"
	if perr.Error() != want {
		t.Errorf("Positioned error = %q\nwant                %q", perr, want)
	}
	de, ok := serde.AsDecodeError(perr)
	if !ok || !de.Positioned || de.Partition != 2 || de.Offset != 17 || de.Serde != "int64" {
		t.Errorf("AsDecodeError = %+v, %v", de, ok)
	}
}

func TestPositioned(t *testing.T) {
	if serde.Positioned(nil, "t", 1, 2) != nil {
		t.Error("Positioned(nil) must be nil")
	}

	// A plain error from a user serde is wrapped, keeping errors.Is.
	err := serde.Positioned(io.ErrUnexpectedEOF, "t", 1, 2)
	if got, want := err.Error(), "deserialize: topic t partition 1 offset 2: unexpected EOF"; got != want {
		t.Errorf("plain: %q, want %q", got, want)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("plain: errors.Is lost the cause")
	}

	// A wrapped DecodeError keeps its context and gains the position.
	inner := &serde.DecodeError{Serde: "json", Topic: "t", Err: io.EOF}
	err = serde.Positioned(fmt.Errorf("value: %w", inner), "t", 1, 2)
	de, ok := serde.AsDecodeError(err)
	if !ok || !de.Positioned || de.Serde != "json" {
		t.Fatalf("wrapped: AsDecodeError = %+v, %v", de, ok)
	}
	if got, want := err.Error(), "deserialize with serde json: topic t partition 1 offset 2: value: deserialize with serde json: topic t: EOF"; got != want {
		t.Errorf("wrapped: %q\nwant      %q", got, want)
	}
	if !errors.Is(err, io.EOF) {
		t.Error("wrapped: errors.Is lost the cause")
	}
}

func TestAsDecodeErrorMiss(t *testing.T) {
	if de, ok := serde.AsDecodeError(io.EOF); ok || de != nil {
		t.Errorf("AsDecodeError(io.EOF) = %v, %v", de, ok)
	}
	if _, ok := serde.AsDecodeError(nil); ok {
		t.Error("AsDecodeError(nil) must be false")
	}
}
