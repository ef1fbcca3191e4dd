package versionedtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stoatflow/stoatctl/engine/state"
)

// The constants of RocksDBVersionedStoreTest.
const (
	HistoryRetention = 300_000
	SegmentInterval  = HistoryRetention / 3
	Base             = 10
	// Grace is the history retention, which doubles as the grace period.
	Grace = HistoryRetention
	// undefined is Kafka Streams' PUT_RETURN_CODE_VALID_TO_UNDEFINED,
	// which its reads' checks also use for a latest version's validTo.
	undefined = state.PutValidToUndefined
	notPut    = state.PutNotPut
)

// Op is what a step does.
type Op int

const (
	OpPut Op = iota
	OpDelete
	OpGet
	OpGetAsOf
	OpRestore
)

// Record is one changelog record of a restore step.
type Record struct {
	Key   string
	Value *string
	TS    int64
}

// Step is one operation and what it must answer.
type Step struct {
	Op    Op
	Key   string
	Value *string // put's value (nil: tombstone); a read's or delete's expected value (nil: none)
	TS    int64   // put's or delete's timestamp, GetAsOf's asOf
	// Want is a put's return code; for reads and deletes the expected
	// version's timestamp and validTo.
	Want, WantTS, WantValidTo int64
	Batch                     []Record
}

func s(v string) *string { return &v }

func put(k string, v *string, ts, want int64) Step {
	return Step{Op: OpPut, Key: k, Value: v, TS: ts, Want: want}
}

// latest reads key's latest version: v valid from ts, or nothing (v nil).
func latest(k string, v *string, ts int64) Step {
	return Step{Op: OpGet, Key: k, Value: v, WantTS: ts, WantValidTo: state.ValidToOpen}
}

// asOf reads key as of at: v valid from from to to (undefined: latest).
func asOf(k string, at int64, v *string, from, to int64) Step {
	if to == undefined {
		to = state.ValidToOpen
	}
	return Step{Op: OpGetAsOf, Key: k, TS: at, Value: v, WantTS: from, WantValidTo: to}
}

func asOfNull(k string, at int64) Step { return asOf(k, at, nil, 0, 0) }

// del deletes key at ts and expects v valid from from back (v nil:
// nothing).
func del(k string, ts int64, v *string, from int64) Step {
	return Step{Op: OpDelete, Key: k, TS: ts, Value: v, WantTS: from}
}

func restore(recs ...Record) Step { return Step{Op: OpRestore, Batch: recs} }

func rec(k string, v *string, ts int64) Record { return Record{Key: k, Value: v, TS: ts} }

// Scenario is one transcribed test.
type Scenario struct {
	// Name is RocksDBVersionedStoreTest's method.
	Name string
	// Retention overrides HistoryRetention when set (ZeroRetention).
	Retention     int64
	ZeroRetention bool
	Steps         []Step
}

const (
	si = SegmentInterval
	hr = HistoryRetention
	b  = Base
)

// Scenarios are RocksDBVersionedStoreTest's tests of put, get, delete,
// expiry and restore, step for step (its segment-layout and metric checks
// aside: our layout has no segments, and drops are counted by the
// processor that sees a put refused).
var Scenarios = []Scenario{
	{Name: "shouldPutLatest", Steps: []Step{
		put("k", s("v"), b, undefined),
		put("k", s("v2"), b+1, undefined),
		latest("k", s("v2"), b+1),
		asOf("k", b, s("v"), b, b+1),
		asOf("k", b+1, s("v2"), b+1, undefined),
		asOf("k", b+2, s("v2"), b+1, undefined),
	}},
	{Name: "shouldPutNullAsLatest", Steps: []Step{
		put("k", nil, b, undefined),
		put("k", nil, b+1, undefined),
		latest("k", nil, 0),
		asOfNull("k", b), asOfNull("k", b+1), asOfNull("k", b+2),
	}},
	{Name: "shouldPutOlderWithNonNullLatest", Steps: []Step{
		put("k", s("v"), b, undefined),
		put("k", s("v2"), b-2, b),
		put("k", s("v1"), b-1, b),
		put("k", s("v4"), b-4, b-2),
		latest("k", s("v"), b),
		asOf("k", b, s("v"), b, undefined),
		asOf("k", b-1, s("v1"), b-1, b),
		asOf("k", b-2, s("v2"), b-2, b-1),
		asOf("k", b-3, s("v4"), b-4, b-2),
	}},
	{Name: "shouldPutOlderWithNullLatest", Steps: []Step{
		put("k", nil, b, undefined),
		put("k", s("v2"), b-2, b),
		put("k", s("v1"), b-1, b),
		put("k", s("v4"), b-4, b-2),
		latest("k", nil, 0),
		asOfNull("k", b),
		asOf("k", b-1, s("v1"), b-1, b),
		asOf("k", b-2, s("v2"), b-2, b-1),
		asOf("k", b-3, s("v4"), b-4, b-2),
	}},
	{Name: "shouldPutOlderNullWithNonNullLatest", Steps: []Step{
		put("k", s("v"), b, undefined),
		put("k", nil, b-2, b),
		put("k", nil, b-1, b),
		put("k", nil, b-4, b-2),
		put("k", s("v5"), b-5, b-4),
		put("k", s("v3"), b-3, b-2),
		put("k", nil, b-6, b-5),
		latest("k", s("v"), b),
		asOf("k", b, s("v"), b, undefined),
		asOfNull("k", b-1),
		asOfNull("k", b-2),
		asOf("k", b-3, s("v3"), b-3, b-2),
		asOfNull("k", b-4),
		asOf("k", b-5, s("v5"), b-5, b-4),
		asOfNull("k", b-6),
	}},
	{Name: "shouldPutOlderNullWithNullLatest", Steps: []Step{
		put("k", nil, b, undefined),
		put("k", nil, b-2, b),
		put("k", nil, b-1, b),
		put("k", nil, b-4, b-2),
		put("k", s("v3"), b-3, b-2),
		put("k", s("v5"), b-5, b-4),
		put("k", nil, b-6, b-5),
		latest("k", nil, 0),
		asOfNull("k", b),
		asOfNull("k", b-1),
		asOfNull("k", b-2),
		asOf("k", b-3, s("v3"), b-3, b-2),
		asOfNull("k", b-4),
		asOf("k", b-5, s("v5"), b-5, b-4),
		asOfNull("k", b-6),
	}},
	{Name: "shouldPutRepeatTimestampAsLatest", Steps: []Step{
		put("k", s("to_be_replaced"), b, undefined),
		put("k", s("b"), b, undefined),
		latest("k", s("b"), b),
		asOf("k", b, s("b"), b, undefined),
		asOfNull("k", b-1),
		put("k", nil, b, undefined),
		latest("k", nil, 0),
		asOfNull("k", b),
		asOfNull("k", b-1),
		put("k", nil, b, undefined),
		latest("k", nil, 0),
		asOfNull("k", b),
		asOfNull("k", b-1),
		put("k", s("b"), b, undefined),
		latest("k", s("b"), b),
		asOf("k", b, s("b"), b, undefined),
		asOfNull("k", b-1),
	}},
	{Name: "shouldPutRepeatTimestamps", Steps: []Step{
		put("k", s("to_be_replaced"), si+20, undefined),
		put("k", nil, si-10, si+20),
		put("k", s("to_be_replaced"), si-10, si+20),
		put("k", nil, si-10, si+20),
		put("k", s("to_be_replaced"), si-1, si+20),
		put("k", s("to_be_replaced"), si+1, si+20),
		put("k", nil, si-1, si+1),
		put("k", nil, si+1, si+20),
		put("k", nil, si+10, si+20),
		put("k", nil, si+5, si+10),
		put("k", s("vp5"), si+5, si+10),
		put("k", s("to_be_replaced"), si-5, si-1),
		put("k", s("vn5"), si-5, si-1),
		put("k", nil, si+20, undefined),
		put("k", nil, si+20, undefined),
		put("k", s("vn6"), si-6, si-5),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOfNull("k", si+15),
		asOf("k", si+6, s("vp5"), si+5, si+10),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn5"), si-5, si-1),
		asOf("k", si-6, s("vn6"), si-6, si-5),
		asOfNull("k", si-8),
	}},
	{Name: "shouldPutIntoMultipleSegments", Steps: []Step{
		put("k", nil, si-20, undefined),
		put("k", s("vn10"), si-10, undefined),
		put("k", nil, si-1, undefined),
		put("k", nil, si+1, undefined),
		put("k", s("vp10"), si+10, undefined),
		put("k", nil, si+20, undefined),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOf("k", si+15, s("vp10"), si+10, si+20),
		asOfNull("k", si+5),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn10"), si-10, si-1),
		asOfNull("k", si-15),
	}},
	{Name: "shouldMoveRecordToOlderSegmentDuringPut", Steps: []Step{
		put("k", s("vp20"), si+20, undefined),
		put("k", s("vp10"), si+10, si+20),
		put("k", s("vn10"), si-10, si+10),
		put("k", s("vn2"), si-2, si+10),
		put("k", s("vn1"), si-1, si+10),
		put("k", s("vp1"), si+1, si+10),
		latest("k", s("vp20"), si+20),
		asOf("k", si+30, s("vp20"), si+20, undefined),
		asOf("k", si+15, s("vp10"), si+10, si+20),
		asOf("k", si+5, s("vp1"), si+1, si+10),
		asOf("k", si, s("vn1"), si-1, si+1),
		asOf("k", si-1, s("vn1"), si-1, si+1),
		asOf("k", si-2, s("vn2"), si-2, si-1),
		asOf("k", si-5, s("vn10"), si-10, si-2),
	}},
	{Name: "shouldMoveRecordToOlderSegmentWithNullsDuringPut", Steps: []Step{
		put("k", nil, si+20, undefined),
		put("k", nil, si-1, si+20),
		put("k", nil, si+1, si+20),
		put("k", nil, si-10, si-1),
		put("k", nil, si+10, si+20),
		put("k", s("vp5"), si+5, si+10),
		put("k", s("vn5"), si-5, si-1),
		put("k", s("vn6"), si-6, si-5),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOfNull("k", si+15),
		asOf("k", si+6, s("vp5"), si+5, si+10),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn5"), si-5, si-1),
		asOf("k", si-6, s("vn6"), si-6, si-5),
		asOfNull("k", si-8),
	}},
	{Name: "shouldFallThroughToExistingOlderSegmentAsLatestDuringPut", Steps: []Step{
		put("k", nil, si-5, undefined),
		put("k", s("vn6"), si-6, si-5),
		put("k", s("vp20"), si+20, undefined),
		put("k", nil, si+10, si+20),
		put("k", nil, si-1, si+10),
		put("k", s("vn2"), si-2, si-1),
		latest("k", s("vp20"), si+20),
		asOf("k", si+30, s("vp20"), si+20, undefined),
		asOfNull("k", si+12),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-2, s("vn2"), si-2, si-1),
		asOfNull("k", si-5),
		asOf("k", si-6, s("vn6"), si-6, si-5),
	}},
	{Name: "shouldPutNonLatestTombstoneIntoNewSegmentWithValidTo", Steps: []Step{
		put("k", s("vp30"), si+30, undefined),
		put("k", nil, si-10, si+30),
		put("k", s("vn5"), si-5, si+30),
		put("k", s("vn1"), si-1, si+30),
		put("k", nil, si-2, si-1),
		latest("k", s("vp30"), si+30),
		asOf("k", si+10, s("vn1"), si-1, si+30),
		asOf("k", si-1, s("vn1"), si-1, si+30),
		asOfNull("k", si-2),
		asOf("k", si-5, s("vn5"), si-5, si-2),
		asOfNull("k", si-10),
	}},
	{Name: "shouldDelete", Steps: []Step{
		put("k", s("vp20"), si+20, undefined),
		put("k", s("vp10"), si+10, si+20),
		put("k", s("vn10"), si-10, si+10),
		put("k", s("vn2"), si-2, si+10),
		del("k", si-5, s("vn10"), si-10),
		del("k", si+10, s("vp10"), si+10),
		del("k", si+10, nil, 0),
		del("k", si+25, s("vp20"), si+20),
	}},
	{Name: "shouldNotPutExpired", Steps: []Step{
		put("k", s("v"), hr+10, undefined),
		put("k1", s("v1"), hr+10-Grace, undefined),
		latest("k1", s("v1"), hr+10-Grace),
		put("k2", s("v2"), hr+9-Grace, notPut),
		latest("k2", nil, 0),
	}},
	{Name: "shouldNotDeleteExpired", Steps: []Step{
		put("k1", s("v1"), 1, undefined),
		put("k2", s("v2"), 1, undefined),
		put("kother", s("vother"), hr+10, undefined),
		del("k1", hr+10-Grace, s("v1"), 1),
		latest("k1", nil, 0),
		del("k2", hr+9-Grace, nil, 0),
		latest("k2", s("v2"), 1),
	}},
	{Name: "shouldGetFromOlderSegments", Steps: []Step{
		put("ko", nil, si-10, undefined),
		put("ko", nil, 2*si-10, undefined),
		put("ko", nil, 3*si-10, undefined),
		asOfNull("k", si-20),
		put("k", s("v"), si-20, undefined),
		put("k", nil, si-10, undefined),
		asOfNull("k", si-30),
		asOf("k", si-15, s("v"), si-20, si-10),
		asOfNull("k", si-5),
		put("k", s("v2"), 3*si-20, undefined),
		put("k", nil, 3*si-10, undefined),
		asOfNull("k", si-30),
		asOf("k", si-15, s("v"), si-20, si-10),
		asOfNull("k", si-5),
	}},
	{Name: "shouldNotGetExpired", Steps: []Step{
		put("k", s("v_old"), 0, undefined),
		put("k", s("v"), si-10, undefined),
		asOf("k", si-11, s("v_old"), 0, si-10),
		put("ko", s("vo"), hr+si-11, undefined),
		asOf("k", si-11, s("v_old"), 0, si-10),
		put("ko", s("vo2"), hr+si-10, undefined),
		asOfNull("k", si-11),
	}},
	{Name: "shouldGetExpiredIfLatestValue", Steps: []Step{
		put("k", s("v"), 1, undefined),
		put("ko", s("vo_old"), 1, undefined),
		put("ko", s("vo_new"), hr+12, undefined),
		asOf("k", 10, s("v"), 1, undefined),
		asOfNull("ko", 10),
	}},
	{Name: "shouldDistinguishEmptyAndNull", Steps: []Step{
		put("k", nil, si+20, undefined),
		put("k", nil, si-10, si+20),
		put("k", nil, si-1, si+20),
		put("k", nil, si+1, si+20),
		put("k", nil, si+10, si+20),
		put("k", s(""), si+5, si+10),
		put("k", s(""), si-5, si-1),
		put("k", s(""), si-6, si-5),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOfNull("k", si+15),
		asOf("k", si+6, s(""), si+5, si+10),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s(""), si-5, si-1),
		asOf("k", si-6, s(""), si-6, si-5),
		asOfNull("k", si-8),
	}},
	{Name: "shouldRestore", Steps: []Step{
		restore(rec("k", s("vp20"), si+20), rec("k", s("vp10"), si+10), rec("k", s("vn10"), si-10),
			rec("k", s("vn2"), si-2), rec("k", s("vn1"), si-1), rec("k", s("vp1"), si+1)),
		latest("k", s("vp20"), si+20),
		asOf("k", si+30, s("vp20"), si+20, undefined),
		asOf("k", si+15, s("vp10"), si+10, si+20),
		asOf("k", si+5, s("vp1"), si+1, si+10),
		asOf("k", si, s("vn1"), si-1, si+1),
		asOf("k", si-1, s("vn1"), si-1, si+1),
		asOf("k", si-2, s("vn2"), si-2, si-1),
		asOf("k", si-5, s("vn10"), si-10, si-2),
	}},
	{Name: "shouldRestoreWithNulls", Steps: []Step{
		restore(rec("k", nil, si+20), rec("k", nil, si-1), rec("k", nil, si+1), rec("k", nil, si-10),
			rec("k", nil, si+10), rec("k", s("vp5"), si+5), rec("k", s("vn5"), si-5), rec("k", s("vn6"), si-6)),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOfNull("k", si+15),
		asOf("k", si+6, s("vp5"), si+5, si+10),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn5"), si-5, si-1),
		asOf("k", si-6, s("vn6"), si-6, si-5),
		asOfNull("k", si-8),
	}},
	{Name: "shouldRestoreWithNullsAndRepeatTimestamps", Steps: []Step{
		restore(rec("k", s("to_be_replaced"), si+20), rec("k", nil, si-10), rec("k", s("to_be_replaced"), si-10),
			rec("k", nil, si-10), rec("k", s("to_be_replaced"), si-1), rec("k", s("to_be_replaced"), si+1),
			rec("k", nil, si-1), rec("k", nil, si+1), rec("k", nil, si+10), rec("k", nil, si+5),
			rec("k", s("vp5"), si+5), rec("k", s("to_be_replaced"), si-5), rec("k", s("vn5"), si-5),
			rec("k", nil, si+20), rec("k", nil, si+20), rec("k", s("vn6"), si-6)),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOfNull("k", si+15),
		asOf("k", si+6, s("vp5"), si+5, si+10),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn5"), si-5, si-1),
		asOf("k", si-6, s("vn6"), si-6, si-5),
		asOfNull("k", si-8),
	}},
	{Name: "shouldRestoreMultipleBatches", Steps: []Step{
		restore(rec("k", nil, si-20), rec("k", s("vn10"), si-10), rec("k", nil, si-1)),
		restore(rec("k", nil, si+1), rec("k", s("vp10"), si+10), rec("k", nil, si+20)),
		latest("k", nil, 0),
		asOfNull("k", si+30),
		asOf("k", si+15, s("vp10"), si+10, si+20),
		asOfNull("k", si+5),
		asOfNull("k", si+2),
		asOfNull("k", si),
		asOfNull("k", si-1),
		asOf("k", si-5, s("vn10"), si-10, si-1),
		asOfNull("k", si-15),
	}},
	{Name: "shouldNotRestoreExpired", Steps: []Step{
		restore(rec("k", s("v"), hr+10), rec("k1", s("v1"), hr+10-Grace), rec("k2", s("v2"), hr+9-Grace)),
		latest("k", s("v"), hr+10),
		latest("k1", s("v1"), hr+10-Grace),
		latest("k2", nil, 0),
	}},
	{Name: "shouldRestoreEvenIfRecordWouldBeExpiredByEndOfBatch", Steps: []Step{
		restore(rec("k2", s("v2"), hr-Grace), rec("k", s("v"), hr+10)),
		latest("k2", s("v2"), hr-Grace),
		latest("k", s("v"), hr+10),
	}},
	{Name: "shouldAllowZeroHistoryRetention", ZeroRetention: true, Steps: []Step{
		put("k", s("v"), b, undefined),
		latest("k", s("v"), b),
		asOf("k", b, s("v"), b, undefined),
		asOf("k", b+1, s("v"), b, undefined),
		put("k", s("updated"), b, undefined),
		latest("k", s("updated"), b),
		asOf("k", b, s("updated"), b, undefined),
		put("k", s("v2"), b+2, undefined),
		latest("k", s("v2"), b+2),
		asOf("k", b+2, s("v2"), b+2, undefined),
		asOfNull("k", b+1),
		del("k", b+3, s("v2"), b+2),
		latest("k", nil, 0),
		put("k2", s("v"), b+2, notPut),
		latest("k2", nil, 0),
	}},
}

// Env is one store under test.
type Env struct {
	Store state.VersionedKeyValueStore[string, *string]
	// Changelog returns what the store logged so far, in order.
	Changelog func() []state.ChangelogRecord
	// Settle, when set, runs between steps: the RocksDB variant commits
	// the epoch there, so that reads cross layers and the database.
	Settle func(step int)
	// BeginRestore and EndRestore, when set, bracket the restore of the
	// restored store: the RocksDB variant writes it in bulk there.
	BeginRestore, EndRestore func()
}

// Opener makes a fresh, initialised store with the given history
// retention (ms), named name.
type Opener func(t *testing.T, name string, retention int64) Env

// Run runs every scenario on stores from open, then restores a fresh
// store from the changelog each scenario's store wrote and checks that it
// answers every read the same at every time the scenario used.
func Run(t *testing.T, open Opener) {
	for _, sc := range Scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			retention := int64(HistoryRetention)
			if sc.ZeroRetention {
				retention = 0
			}
			env := open(t, "versioned", retention)
			keys, times := []string{}, []int64{}
			for i, st := range sc.Steps {
				runStep(t, env.Store, i, st)
				if !slices.Contains(keys, st.Key) && st.Key != "" {
					keys = append(keys, st.Key)
				}
				times = append(times, st.TS-1, st.TS, st.TS+1)
				for _, r := range st.Batch {
					if !slices.Contains(keys, r.Key) {
						keys = append(keys, r.Key)
					}
					times = append(times, r.TS-1, r.TS, r.TS+1)
				}
				if env.Settle != nil {
					env.Settle(i)
				}
			}
			restored := open(t, "versioned-restored", retention)
			var recs []state.ChangelogRecord
			for _, st := range sc.Steps {
				if st.Op == OpRestore {
					recs = append(recs, batch(st.Batch)...)
				}
			}
			recs = append(recs, env.Changelog()...)
			if restored.BeginRestore != nil {
				restored.BeginRestore()
			}
			// Two calls, as the runtime restores in chunks.
			half := len(recs) / 2
			for _, part := range [][]state.ChangelogRecord{recs[:half], recs[half:]} {
				if err := restored.Store.(state.Restorer).Restore(part); err != nil {
					t.Fatalf("restore: %v", err)
				}
			}
			if restored.EndRestore != nil {
				restored.EndRestore()
			}
			for _, k := range keys {
				compare(t, env.Store, restored.Store, k, times)
			}
			if a, b := List(t, env.Store), List(t, restored.Store); !slices.Equal(a, b) {
				t.Errorf("latest values: written %v, restored %v", a, b)
			}
		})
	}
}

func batch(rs []Record) []state.ChangelogRecord {
	out := make([]state.ChangelogRecord, len(rs))
	for i, r := range rs {
		out[i] = state.ChangelogRecord{Key: []byte(r.Key), Timestamp: r.TS}
		if r.Value != nil {
			out[i].Value = []byte(*r.Value)
		}
	}
	return out
}

func show(v *string) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *v)
}

func runStep(t *testing.T, st state.VersionedKeyValueStore[string, *string], i int, s Step) {
	t.Helper()
	switch s.Op {
	case OpPut:
		got, err := st.Put(s.Key, s.Value, s.TS)
		if err != nil {
			t.Fatalf("step %d: put(%s, %s, %d): %v", i, s.Key, show(s.Value), s.TS, err)
		}
		if got != s.Want {
			t.Errorf("step %d: put(%s, %s, %d) = %d, want %d", i, s.Key, show(s.Value), s.TS, got, s.Want)
		}
	case OpDelete:
		r, found, err := st.Delete(s.Key, s.TS)
		if err != nil {
			t.Fatalf("step %d: delete(%s, %d): %v", i, s.Key, s.TS, err)
		}
		checkRead(t, fmt.Sprintf("step %d: delete(%s, %d)", i, s.Key, s.TS), r, found, s, false)
	case OpGet:
		r, found, err := st.Get(s.Key)
		if err != nil {
			t.Fatalf("step %d: get(%s): %v", i, s.Key, err)
		}
		checkRead(t, fmt.Sprintf("step %d: get(%s)", i, s.Key), r, found, s, true)
	case OpGetAsOf:
		r, found, err := st.GetAsOf(s.Key, s.TS)
		if err != nil {
			t.Fatalf("step %d: get(%s, %d): %v", i, s.Key, s.TS, err)
		}
		checkRead(t, fmt.Sprintf("step %d: get(%s, %d)", i, s.Key, s.TS), r, found, s, true)
	case OpRestore:
		if err := st.(state.Restorer).Restore(batch(s.Batch)); err != nil {
			t.Fatalf("step %d: restore: %v", i, err)
		}
	}
}

func checkRead(t *testing.T, what string, r state.VersionedRecord[*string], found bool, s Step, validTo bool) {
	t.Helper()
	switch {
	case s.Value == nil && found:
		t.Errorf("%s = %s from %d, want nothing", what, show(r.Value), r.Timestamp)
	case s.Value == nil:
	case !found:
		t.Errorf("%s = nothing, want %s from %d", what, show(s.Value), s.WantTS)
	case r.Value == nil || *r.Value != *s.Value || r.Timestamp != s.WantTS:
		t.Errorf("%s = %s from %d, want %s from %d", what, show(r.Value), r.Timestamp, show(s.Value), s.WantTS)
	case validTo && r.ValidTo != s.WantValidTo:
		t.Errorf("%s: valid to %d, want %d", what, r.ValidTo, s.WantValidTo)
	}
}

// compare reads k latest and as of every time in both stores.
func compare(t *testing.T, a, b state.VersionedKeyValueStore[string, *string], k string, times []int64) {
	t.Helper()
	type answer struct {
		v       string
		found   bool
		from    int64
		validTo int64
	}
	read := func(st state.VersionedKeyValueStore[string, *string], at int64, latest bool) answer {
		var r state.VersionedRecord[*string]
		var found bool
		var err error
		if latest {
			r, found, err = st.Get(k)
		} else {
			r, found, err = st.GetAsOf(k, at)
		}
		if err != nil {
			t.Fatalf("read %s at %d: %v", k, at, err)
		}
		if !found {
			return answer{}
		}
		return answer{v: show(r.Value), found: true, from: r.Timestamp, validTo: r.ValidTo}
	}
	if x, y := read(a, 0, true), read(b, 0, true); x != y {
		t.Errorf("get(%s): written %+v, restored %+v", k, x, y)
	}
	for _, at := range times {
		if x, y := read(a, at, false), read(b, at, false); x != y {
			t.Errorf("get(%s, %d): written %+v, restored %+v", k, at, x, y)
		}
	}
}

// List is every latest value All lists, as key=value@timestamp.
func List(t *testing.T, st state.VersionedKeyValueStore[string, *string]) []string {
	t.Helper()
	it, err := st.All()
	if err != nil {
		t.Fatalf("all: %v", err)
	}
	defer it.Close()
	var out []string
	for it.Next() {
		out = append(out, fmt.Sprintf("%s=%s@%d", it.Key(), show(it.Value().Value), it.Value().Timestamp))
	}
	if err := it.Err(); err != nil {
		t.Fatalf("all: %v", err)
	}
	return out
}

// model is the versioned store's semantics written plainly: every version
// of every key, never pruned, and the observed stream time.
type model struct {
	retention int64
	observed  int64
	versions  map[string]map[int64]*string
}

func (m *model) horizon() int64 { return m.observed - m.retention }

// at is the version of k valid at asOf: its timestamp, value and validTo.
func (m *model) at(k string, asOf int64) (ts int64, v *string, validTo int64, found bool) {
	ts, validTo = math.MinInt64, state.ValidToOpen
	for t, val := range m.versions[k] {
		if t <= asOf && t > ts {
			ts, v, found = t, val, true
		}
		if t > asOf && t < validTo {
			validTo = t
		}
	}
	return ts, v, validTo, found
}

func (m *model) getAsOf(k string, asOf int64) (string, bool) {
	if asOf < m.horizon() {
		ts, v, _, found := m.at(k, math.MaxInt64)
		if !found || v == nil || ts > asOf {
			return "", false
		}
		return fmt.Sprintf("%s@%d", *v, ts), true
	}
	ts, v, validTo, found := m.at(k, asOf)
	if !found || v == nil {
		return "", false
	}
	return fmt.Sprintf("%s@%d-%d", *v, ts, validTo), true
}

func (m *model) put(k string, v *string, ts int64) int64 {
	if ts < m.horizon() {
		return notPut
	}
	m.observed = max(m.observed, ts)
	if m.versions[k] == nil {
		m.versions[k] = map[int64]*string{}
	}
	m.versions[k][ts] = v
	if _, _, validTo, _ := m.at(k, ts); validTo != state.ValidToOpen {
		return validTo
	}
	return undefined
}

// RunModel runs random puts, tombstones, deletes and reads on a store from
// open and on the model, over few keys and times that mostly move forward
// (so that the retention expires versions and the store prunes them), and
// requires the same answer to every operation. The caller logs seed.
func RunModel(t *testing.T, open Opener, seed uint64, settle bool) {
	rng := rand.New(rand.NewPCG(seed, 43))
	const retention = 50
	env := open(t, "model", retention)
	m := &model{retention: retention, observed: -1, versions: map[string]map[int64]*string{}}
	keys := []string{"a", "b", "ab", ""}
	now := int64(0)
	for i := range 3000 {
		k := keys[rng.IntN(len(keys))]
		now += int64(rng.IntN(3))
		ts := max(0, now-int64(rng.IntN(70)))
		switch op := rng.IntN(10); {
		case op < 4:
			v := fmt.Sprintf("v%d", i)
			want := m.put(k, &v, ts)
			got, err := env.Store.Put(k, &v, ts)
			if err != nil || got != want {
				t.Fatalf("op %d: put(%q, %s, %d) = %d, %v; model %d", i, k, v, ts, got, err, want)
			}
		case op < 5:
			want := m.put(k, nil, ts)
			got, err := env.Store.Put(k, nil, ts)
			if err != nil || got != want {
				t.Fatalf("op %d: put(%q, null, %d) = %d, %v; model %d", i, k, ts, got, err, want)
			}
		case op < 6:
			var want string
			var wantFound bool
			if ts >= m.horizon() {
				if vts, v, _, found := m.at(k, ts); found && v != nil {
					want, wantFound = fmt.Sprintf("%s@%d", *v, vts), true
				}
				m.put(k, nil, ts)
			}
			r, found, err := env.Store.Delete(k, ts)
			got := ""
			if found {
				got = fmt.Sprintf("%s@%d", *r.Value, r.Timestamp)
			}
			if err != nil || found != wantFound || got != want {
				t.Fatalf("op %d: delete(%q, %d) = %q, %v, %v; model %q, %v", i, k, ts, got, found, err, want, wantFound)
			}
		default:
			asOf := max(0, now-int64(rng.IntN(120)))
			want, wantFound := m.getAsOf(k, asOf)
			r, found, err := env.Store.GetAsOf(k, asOf)
			got := ""
			if found {
				got = fmt.Sprintf("%s@%d", *r.Value, r.Timestamp)
				if asOf >= m.horizon() {
					got += fmt.Sprintf("-%d", r.ValidTo)
				}
			}
			if err != nil || found != wantFound || got != want {
				t.Fatalf("op %d: get(%q, %d) = %q, %v, %v; model %q, %v (stream time %d)", i, k, asOf, got, found, err, want, wantFound, m.observed)
			}
		}
		if settle && env.Settle != nil && i%97 == 0 {
			env.Settle(i / 97)
		}
	}
}
