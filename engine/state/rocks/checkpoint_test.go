package rocks

import (
	"errors"
	"reflect"
	"testing"
)

func TestCheckpointRoundTrip(t *testing.T) {
	for _, cp := range []Checkpoint{
		{Application: "app", Lanes: 1},
		{Application: "app", Lanes: 4, Owned: []string{"in/0", "in/3"}, Offsets: map[string]map[int32]int64{"app-counts-changelog": {0: 12, 3: 0}}},
	} {
		got, err := decodeCheckpoint(cp.encode())
		cp.Layout = Layout // encode stamps it
		if err != nil || !reflect.DeepEqual(got, cp) {
			t.Errorf("round trip of %+v: %+v, %v", cp, got, err)
		}
	}
}

// FuzzDecodeCheckpoint: whatever bytes a state directory holds, decoding
// either fails with ErrCorruptCheckpoint or gives a checkpoint whose
// encoding decodes to the same encoding.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(Checkpoint{Application: "a", Lanes: 2, Offsets: map[string]map[int32]int64{"t": {1: 5}}}.encode())
	f.Add([]byte("{}"))
	f.Add([]byte(`{"lanes":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := decodeCheckpoint(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v is not ErrCorruptCheckpoint", err)
			}
			return
		}
		again, err := decodeCheckpoint(cp.encode())
		if err != nil || string(again.encode()) != string(cp.encode()) {
			t.Fatalf("%+v does not round-trip: %+v, %v", cp, again, err)
		}
	})
}
