package watermark

// Recent remembers the entries of the last few partitions looked up, in
// front of a map keyed by partition. A lane and its task look up the
// event-time entry of a record's partition at every record, and the
// dispatcher's merge by timestamp hands a poll's partitions over nearly
// in turn: a one-entry cache missed at nearly every record (and the
// lane's map sits behind a mutex), while a handful of entries hold them
// all. Entries are never evicted from the map behind it, so a
// remembered pointer stays the partition's. The zero value is empty.
type Recent[T any] struct {
	keys [recentSize]Partition
	vals [recentSize]*T
	n    int // entries in use
	next int // the entry the next Put replaces once all are in use
}

const recentSize = 8

// Get returns the remembered entry of the partition, or nil.
func (r *Recent[T]) Get(topic string, partition int32) *T {
	for i := range r.n {
		if k := &r.keys[i]; k.Partition == partition && k.Topic == topic {
			return r.vals[i]
		}
	}
	return nil
}

// Put remembers v as the partition's entry, replacing the oldest
// remembered one when all are in use.
func (r *Recent[T]) Put(topic string, partition int32, v *T) {
	r.keys[r.next], r.vals[r.next] = Partition{Topic: topic, Partition: partition}, v
	r.next = (r.next + 1) % recentSize
	r.n = min(r.n+1, recentSize)
}
