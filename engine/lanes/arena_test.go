package lanes

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
)

// TestOutArena: the arena's slices are as long as asked, with no room
// past their end, so that appending to one never writes into the next,
// and they span blocks.
func TestOutArena(t *testing.T) {
	var a outArena
	var bs [][]byte
	var hss [][]processor.Header
	for i := range 3000 { // past a block of each
		b := a.bytes(4)
		b[0] = byte(i)
		bs = append(bs, b)
		hs := a.headers(2)
		hs[1].Key = string(rune('a' + i%26))
		hss = append(hss, hs)
		if len(b) != 4 || cap(b) != 4 || len(hs) != 2 || cap(hs) != 2 {
			t.Fatalf("record %d: bytes %d/%d, headers %d/%d", i, len(b), cap(b), len(hs), cap(hs))
		}
		_ = append(b, 0xff)                        // must reallocate, not touch the next
		_ = append(hs, processor.Header{Key: "x"}) // likewise
	}
	for i := range bs {
		if bs[i][0] != byte(i) || hss[i][1].Key != string(rune('a'+i%26)) {
			t.Fatalf("record %d was overwritten: %v %v", i, bs[i], hss[i])
		}
	}
	if big := a.bytes(10_000); len(big) != 10_000 {
		t.Fatalf("a request over a block: %d bytes", len(big))
	}
}

// TestAppendSourceRecycled: a batch handed back (putBatch) and taken again
// (NewBatch) gives AppendSource empty inputs, however full the batch was:
// AppendSource takes the room past a batch's length as it is.
func TestAppendSourceRecycled(t *testing.T) {
	for round := range 3 {
		batch := NewBatch()
		for i := range BatchSize + 3 { // past its room: the append path too
			var in *task.Input
			batch, in = AppendSource(batch)
			if in.Topic != "" || in.Key != nil || in.Value != nil || in.Headers != nil || in.Offset != 0 || in.KeyHashed {
				t.Fatalf("round %d, item %d: the new input is not empty: %+v", round, i, *in)
			}
			if it := batch[len(batch)-1]; it.kind != itemRecord || it.from != 0 || it.floor != noPin || !it.source || it.b != nil {
				t.Fatalf("round %d, item %d: %+v, not a source record", round, i, it)
			}
			*in = task.Input{Topic: "in", Offset: int64(i), Key: []byte("k"), Value: []byte("v"), KeyHashed: true,
				Headers: processor.Headers{{Key: "h"}}}
		}
		putBatch(batch)
	}
}
