package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/broker"
)

func TestFetchPoolBounds(t *testing.T) {
	var p fetchPool
	// Gets with nothing idle make arrays with room to spare.
	a := p.GetRecords(1000)
	if len(a) != 0 || cap(a) < 1000 {
		t.Fatalf("GetRecords(1000) = len %d cap %d", len(a), cap(a))
	}
	p.PutRecords(a[:cap(a)])
	if got := p.GetRecords(900); cap(got) != cap(a) {
		t.Fatalf("GetRecords(900) after a put of cap %d: cap %d, want the idle array", cap(a), cap(got))
	}
	if got := p.GetRecords(900); cap(got) == cap(a) && &got[:1][0] == &a[:1][0] {
		t.Fatal("one idle array was handed out twice")
	}

	// Gets take the smallest idle array that fits.
	p = fetchPool{}
	for _, n := range []int{100, 400, 200} {
		p.PutRecords(make([]kgo.Record, n))
	}
	for _, tc := range []struct{ n, want int }{{150, 200}, {150, 400}, {50, 100}} {
		if got := cap(p.GetRecords(tc.n)); got != tc.want {
			t.Fatalf("GetRecords(%d) = cap %d, want %d", tc.n, got, tc.want)
		}
	}

	// Past its bounds the pool keeps the largest arrays.
	p = fetchPool{}
	for i := 1; i <= 2*fetchPoolArrays; i++ {
		p.PutRecords(make([]kgo.Record, i))
		if len(p.idle) > fetchPoolArrays || p.bytes > fetchPoolBytes {
			t.Fatalf("after %d puts: %d arrays, %d bytes idle", i, len(p.idle), p.bytes)
		}
	}
	for _, s := range p.idle {
		if cap(s) <= fetchPoolArrays {
			t.Fatalf("kept an array of %d records over larger ones", cap(s))
		}
	}
	big := fetchPoolBytes / recordBytes
	p.PutRecords(make([]kgo.Record, big))
	if p.bytes > fetchPoolBytes {
		t.Fatalf("%d bytes idle, bound %d", p.bytes, fetchPoolBytes)
	}
	if p.PutRecords(make([]kgo.Record, big+1)); p.bytes > fetchPoolBytes {
		t.Fatalf("%d bytes idle after a put past the bound", p.bytes)
	}
}

// TestFetchPoolRecycled checks the contract dispatchMerged relies on, on
// the embedded broker: franz-go decodes a fetch into the pool's arrays,
// takes an array back once every record of it is recycled, decodes a
// later fetch into it, and a recycled record's key and value (which the
// lanes keep) do not change when its array is reused.
func TestFetchPoolRecycled(t *testing.T) {
	b, err := broker.Start(context.Background(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"in": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	addr := b.Addr()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(from, n int) {
		t.Helper()
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Key: fmt.Appendf(nil, "k%d", from+i), Value: fmt.Appendf(nil, "v%d", from+i)}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var pool fetchPool
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("in"), kgo.WithPools(&pool))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	type kv struct{ k, v []byte }
	var kept []kv
	read := func(want int) []*kgo.Record {
		t.Helper()
		var got []*kgo.Record
		for len(got) < want {
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			got = append(got, fs.Records()...)
		}
		for _, r := range got {
			kept = append(kept, kv{r.Key, r.Value})
		}
		return got
	}

	produce(0, 500)
	first := read(500)
	for _, r := range first {
		r.Recycle()
	}
	if len(pool.idle) == 0 {
		t.Fatal("no array came back to the pool after every record was recycled")
	}
	idle := map[*kgo.Record]bool{}
	for _, s := range pool.idle {
		idle[&s[:1][0]] = true
	}
	produce(500, 300)
	second := read(300)
	if !idle[second[0]] {
		t.Fatalf("the second fetch was not decoded into an idle array (first record at %p)", unsafe.Pointer(second[0]))
	}
	for i, e := range kept {
		if k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i); string(e.k) != k || string(e.v) != v {
			t.Fatalf("record %d reads %q=%q after its array was reused, want %q=%q", i, e.k, e.v, k, v)
		}
	}
}
