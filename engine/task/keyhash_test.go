package task_test

import (
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/serde"
	"github.com/stoatflow/stoatctl/engine/task"
)

// TestSinkKeyHash: a sink that writes the key as it was read carries the
// dispatcher's hash of it on to the committer, which partitions by it; a
// re-keyed record and an input the dispatcher did not hash carry none.
func TestSinkKeyHash(t *testing.T) {
	bld := dsl.NewBuilder()
	in := dsl.Stream(bld, dsl.ConsumedWith(serde.String(), serde.Bytes()), "in")
	dsl.MapValues(in, func(_ string, v []byte) []byte { return v }).To("same", dsl.ProducedWith(serde.String(), serde.Bytes()))
	dsl.SelectKey(in, func(k string, _ []byte) string { return k + "x" }).To("rekeyed", dsl.ProducedWith(serde.String(), serde.Bytes()))
	built, err := bld.Topology().Build(config.New(map[string]string{config.ApplicationID: "keyhash"}))
	if err != nil {
		t.Fatal(err)
	}
	var outs []task.Output
	tk, err := task.New(built, built.Subtopologies[0], task.Options{ID: "0_0", Lanes: 1,
		Collector: task.CollectorFunc(func(o task.Output) error { outs = append(outs, o); return nil }),
		Time:      task.NewStreamClock(func() int64 { return 0 })})
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.OpenStores(); err != nil {
		t.Fatal(err)
	}
	if err := tk.Init(); err != nil {
		t.Fatal(err)
	}
	defer tk.Close()

	key := []byte("key-00042")
	for _, hashed := range []bool{true, false} {
		outs = nil
		in := task.Input{Topic: "in", Key: key, Value: []byte("v"), Timestamp: 10}
		if hashed {
			in.KeyHash, in.KeyHashed = lane.Murmur2(key), true
		}
		if err := tk.Process(&in); err != nil {
			t.Fatal(err)
		}
		if len(outs) != 2 {
			t.Fatalf("hashed input %v: %d outputs, want 2", hashed, len(outs))
		}
		for _, o := range outs {
			want := hashed && o.Topic == "same"
			if o.KeyHashed != want {
				t.Errorf("hashed input %v: output to %s (key %q) KeyHashed = %v, want %v", hashed, o.Topic, o.Key, o.KeyHashed, want)
			}
			if o.KeyHashed && o.KeyHash != lane.Murmur2(o.Key) {
				t.Errorf("output to %s: KeyHash %d, want Murmur2 of its key %d", o.Topic, o.KeyHash, lane.Murmur2(o.Key))
			}
		}
	}
}
