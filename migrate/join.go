package migrate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/stoatflow/stoatctl/engine/dsl"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// Stream-stream joins. Kafka Streams keeps a join's state in three stores,
// which ours lays out as it does (engine/dsl/join_stream.go), so their
// changelogs are translated record for record:
//
//   - each side's window store ("KSTREAM-JOINTHIS-<n>-store",
//     "KSTREAM-JOINOTHER-<n>-store", "KSTREAM-OUTERTHIS/OUTEROTHER-..." on
//     an outer side, or "<name>-this-join-store", "<name>-other-join-store"
//     and their "outer-" variants under StreamJoined.withStoreName): a
//     window store retaining duplicates, key | timestamp | sequence number
//     and the value as the side's serde wrote it. It is a Window store here;
//     our store must retain duplicates too.
//   - a left or outer join's shared store of unmatched records
//     ("KSTREAM-OUTERSHARED-<n>-store", "<name>-left-shared-join-store",
//     "<name>-outer-shared-join-store"): a key-value store whose key is a
//     TimestampedKeyAndJoinSide and whose value is the list of the
//     LeftOrRightValues waiting under it (ListValueStore, whose
//     change-logging layer logs the whole list). It is JoinOuter here.
//
// Why no frontier is needed: Kafka Streams emits a pair when the second of
// its two records is processed, so every pair of two records in the side
// stores at the cutover has been emitted, and every pair of a record there
// with a later one is ours to emit, once, when the later one comes. An
// unmatched record is in the shared store until its null-join is emitted
// (it is then deleted, a tombstone in the changelog) or a partner matches
// it (deleted too): the store at the cutover holds exactly the null-joins
// not yet emitted. Those whose window had closed at Kafka Streams' stream
// time are pending (it looks for them only when a record at stream time
// arrives, at most once per emit interval), and our engine emits them on
// its first emission pass once its frontier passes their close.

// JoinOuter is the layout of a left or outer join's store of unmatched
// records: the key Kafka Streams' TimestampedKeyAndJoinSideSerializer
// writes (8-byte big-endian timestamp, 1 for the left side or 0 for the
// right, the serialized key), the value its ListSerializer of
// LeftOrRightValueSerializer's bytes (see DecodeJoinOuterValue).
const JoinOuter Kind = "join-outer"

// joinOuterKeyPrefix is the timestamp and side byte before the key.
const joinOuterKeyPrefix = 9

// listVariableSize is the strategy flag of Kafka's ListSerializer for
// elements of no fixed size, the one ListValueStore's list of byte arrays
// uses; listNullEntry is its length of a null element, which a list of
// waiting records never holds.
const (
	listVariableSize = 1
	listNullEntry    = -1
)

// ErrJoinOuter is the class of a shared outer join store record that does
// not decode.
var ErrJoinOuter = errors.New("not a left/outer join's unmatched record")

// DecodeJoinOuterKey splits a TimestampedKeyAndJoinSide: the unmatched
// record's timestamp, whether it is the left (first input's) side, and its
// serialized key, which aliases b.
func DecodeJoinOuterKey(b []byte) (ts int64, left bool, key []byte, err error) {
	if len(b) < joinOuterKeyPrefix {
		return 0, false, nil, fmt.Errorf("%w: key of %d bytes, a timestamp and a side take %d", ErrJoinOuter, len(b), joinOuterKeyPrefix)
	}
	ts = int64(binary.BigEndian.Uint64(b))
	if ts < 0 {
		return 0, false, nil, fmt.Errorf("%w: negative timestamp %d", ErrJoinOuter, ts)
	}
	if b[8] > 1 {
		return 0, false, nil, fmt.Errorf("%w: side byte %d, not 1 (left) or 0 (right)", ErrJoinOuter, b[8])
	}
	return ts, b[8] == 1, b[joinOuterKeyPrefix:len(b):len(b)], nil
}

// JoinOuterValue is one waiting record of a shared outer join store's list:
// its side and its value as that side's serde wrote it.
type JoinOuterValue struct {
	Left  bool
	Value []byte
}

// DecodeJoinOuterValue reads the list a shared outer join store keeps under
// one key: Kafka's ListSerializer with variable-size elements (the flag 1,
// a 4-byte count, then per element a 4-byte length and its bytes), each
// element a LeftOrRightValue (1 for a left value or 0 for a right one, then
// the value). All integers are big-endian. The values alias b.
func DecodeJoinOuterValue(b []byte) ([]JoinOuterValue, error) {
	if len(b) < 5 {
		return nil, fmt.Errorf("%w: value of %d bytes, a list header takes 5", ErrJoinOuter, len(b))
	}
	if b[0] != listVariableSize {
		return nil, fmt.Errorf("%w: list strategy flag %d, ListValueStore writes %d (variable size)", ErrJoinOuter, b[0], listVariableSize)
	}
	n := int64(int32(binary.BigEndian.Uint32(b[1:])))
	rest := b[5:]
	// An element takes at least 5 bytes (length, side): a count beyond
	// that is corrupt and must not size an allocation.
	if n <= 0 || n*5 > int64(len(rest)) {
		return nil, fmt.Errorf("%w: %d elements in %d bytes", ErrJoinOuter, n, len(rest))
	}
	vs := make([]JoinOuterValue, 0, n)
	for i := range n {
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: element %d truncated", ErrJoinOuter, i)
		}
		size := int64(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		switch {
		case size == listNullEntry:
			return nil, fmt.Errorf("%w: element %d is null", ErrJoinOuter, i)
		case size < 1 || size > int64(len(rest)):
			return nil, fmt.Errorf("%w: element %d of %d bytes, %d left", ErrJoinOuter, i, size, len(rest))
		case rest[0] > 1:
			return nil, fmt.Errorf("%w: element %d: side byte %d, not 1 (left) or 0 (right)", ErrJoinOuter, i, rest[0])
		}
		vs = append(vs, JoinOuterValue{Left: rest[0] == 1, Value: rest[1:size:size]})
		rest = rest[size:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last element", ErrJoinOuter, len(rest))
	}
	return vs, nil
}

// decodeJoinOuter decodes a shared outer join store record: the lane key
// is the record key inside the TimestampedKeyAndJoinSide (our engine lanes
// the join by it), Start the unmatched record's timestamp, Left its side,
// Waiting the length of the list (0 for a tombstone).
func decodeJoinOuter(e Entry) (Entry, error) {
	ts, left, key, err := DecodeJoinOuterKey(e.Key)
	if err != nil {
		return e, err
	}
	e.LaneKey, e.Start, e.Left = key, ts, left
	if e.Value == nil {
		return e, nil
	}
	vs, err := DecodeJoinOuterValue(e.Value)
	if err != nil {
		return e, err
	}
	for i, v := range vs {
		// Kafka Streams keeps records of the key's side under it
		// (makeThisKey with makeThisValue).
		if v.Left != left {
			return e, fmt.Errorf("%w: element %d is of the %s side, its key of the %s", ErrJoinOuter, i, sideName(v.Left), sideName(left))
		}
	}
	e.Waiting = len(vs)
	return e, nil
}

func sideName(left bool) string {
	if left {
		return "left"
	}
	return "right"
}

// joinStoreRole tells a stream-stream join's store of Kafka Streams by its
// name (generated, or from StreamJoined.withStoreName): "window" for a
// side's window store, "outer" for the shared store of unmatched records,
// "" for any other store.
func joinStoreRole(store string) string {
	for _, s := range []string{"KSTREAM-OUTERSHARED-", "-left-shared-join-store", "-outer-shared-join-store"} {
		if strings.Contains(store, s) {
			return "outer"
		}
	}
	for _, s := range []string{"KSTREAM-JOINTHIS-", "KSTREAM-JOINOTHER-", "KSTREAM-OUTERTHIS-", "KSTREAM-OUTEROTHER-", "-this-join-store", "-other-join-store"} {
		if strings.Contains(store, s) {
			return "window"
		}
	}
	return ""
}

// NullJoinPlan is what the cutover hands our engine of a left or outer
// join's unmatched records.
type NullJoinPlan struct {
	// Waiting is how many unmatched records Kafka Streams' store holds:
	// each either finds a partner after the cutover or has its null-join
	// emitted by our engine, once.
	Waiting int64 `json:"waiting"`
	// Pending is how many of them had their window closed at Kafka
	// Streams' stream time (their task's largest partition time): their
	// null-joins were due and not yet emitted (it looks only when a
	// record arrives, at most once per emit interval). Ours emits them
	// once its frontier passes their close, on its first emission pass
	// for those closed at the watermark floor.
	Pending int64 `json:"pending"`
}

// planNullJoins counts the waiting and pending unmatched records of a
// shared outer join store, live holding its entries per partition. The
// stream time of a task is the largest partition time committed for its
// partition number: the join's two inputs are co-partitioned, and its
// stream time is the largest timestamp either side has seen.
func planNullJoins(live map[int32]map[string]Entry, closeAt func(ts int64, left bool) int64, meta map[string]map[int32]kafka.TopicPartitionMetadata) *NullJoinPlan {
	np := &NullJoinPlan{}
	for part, entries := range live {
		stream := int64(-1)
		for _, ms := range meta {
			if m, ok := ms[part]; ok {
				stream = max(stream, m.PartitionTime)
			}
		}
		for _, e := range entries {
			np.Waiting += int64(e.Waiting)
			if closeAt != nil && stream >= 0 && closeAt(e.Start, e.Left) <= stream {
				np.Pending += int64(e.Waiting)
			}
		}
	}
	return np
}

// joinRolesMatch refuses a mapping that pairs a join store with a store
// of ours of another role: Kafka Streams' shared outer store with anything
// but our outer join store (and the reverse), a side's window store with
// a window store that does not retain duplicates (a side keeps every
// record, several of one key and timestamp apart). It sets JoinOuter on a
// store that is one.
func (s *session) joinRolesMatch(sp *StorePlan, ksStore, ours string, info *topology.StoreInfo) bool {
	role := joinStoreRole(ksStore)
	oj, isOuter := info.Builder.(dsl.OuterJoinStore)
	switch {
	case role == "outer" && !isOuter:
		sp.problem(ProblemStoreKind, nil, "store %s: a left/outer join's store of unmatched records, and our store %s is not one (a %s store)", ksStore, ours, info.Builder.Kind())
		return false
	case role != "outer" && isOuter:
		sp.problem(ProblemStoreKind, nil, "store %s: our store %s holds a left/outer join's unmatched records, and Kafka Streams' store %s is not such a store (by its name)", ksStore, ours, ksStore)
		return false
	case isOuter:
		sp.Kind, sp.outerClose = JoinOuter, oj.OuterJoinClose
	case role == "window":
		if d, ok := info.Builder.(interface{ RetainDuplicates() bool }); !ok || !d.RetainDuplicates() {
			sp.problem(ProblemStoreKind, nil, "store %s: a stream-stream join's window store, and our store %s (a %s store) is not one retaining duplicates", ksStore, ours, info.Builder.Kind())
			return false
		}
	}
	return true
}
