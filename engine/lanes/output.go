package lanes

import (
	"encoding/binary"
	"sync"

	"github.com/stoatflow/stoatctl/engine/barrier"
	"github.com/stoatflow/stoatctl/engine/lane"
	"github.com/stoatflow/stoatctl/engine/processor"
	"github.com/stoatflow/stoatctl/engine/task"
)

// reportChunk is how many records a lane collects before handing them
// to the committer mid-epoch.
const reportChunk = 512

// outsPool recycles report chunks: a chunk of 512 outputs is a large
// allocation, one per 512 records, which the committer gives back
// (RecycleOuts) once it has produced them.
var outsPool = sync.Pool{New: func() any {
	s := make([]task.Output, 0, reportChunk)
	return &s
}}

func newOuts() []task.Output { return (*outsPool.Get().(*[]task.Output))[:0] }

// RecycleOuts gives back a report's outputs once they are produced and
// nothing refers to them: cleared, so that the pool holds on to no key or
// value.
func RecycleOuts(outs []task.Output) {
	if cap(outs) != reportChunk {
		return
	}
	clear(outs)
	outs = outs[:0]
	outsPool.Put(&outs)
}

// send is the task's collector: boundary records go to the downstream
// lane of their key, everything else joins the epoch's output.
func (l *Lane) send(o task.Output) error {
	if o.Boundary != nil {
		return l.forward(o)
	}
	if l.cur.kind == itemRecord && l.cur.in.Topic != "" {
		o.Origin = l.origin()
	}
	if o.Store == "" {
		l.noteOutput()
		return l.emit(o)
	}
	m := l.laneMark()
	if !l.coalesce.on() || o.Uncoalesced {
		// A held write of the same store is of another key (a versioned
		// store's writes are never held), so the order of each key's
		// writes, all restore needs, is kept.
		l.noteOutput()
		return l.emitChangelog(o, m)
	}
	// Counted once per record that will leave: a changelog write that
	// replaces a held one adds nothing, and a held one counts now, so
	// that the idle rule sees the epoch has work to commit. A held write
	// is routed when it leaves: most are replaced before then.
	if l.coalesce.add(o, m) {
		l.noteOutput()
	}
	if l.coalesce.full() {
		return l.flushChangelog()
	}
	return nil
}

// noteOutput marks that the lanes wrote a record since the runner last
// took Env.Outputs. Only a zero matters to the idle rule, so a lane adds
// only to a zero: a shared counter added to once a record moves its cache
// line between the cores at every record, which the loads here do not.
// An output the lane makes after crossing a barrier's marker always finds
// the runner's reset (it took the counter before it sent the marker), so
// it is never lost to the next decision.
func (l *Lane) noteOutput() {
	if o := l.env.Outputs; o.Load() == 0 {
		o.Add(1)
	}
}

// flushChangelog hands the changelog records held back so far to the
// epoch's output.
func (l *Lane) flushChangelog() error {
	if !l.coalesce.on() || l.coalesce.held() == 0 {
		return nil
	}
	return l.coalesce.drain(l.emitChangelog)
}

// emitChangelog routes a changelog record and adds it to the epoch's
// output.
func (l *Lane) emitChangelog(o task.Output, m laneMark) error {
	l.routeChangelog(&o, m)
	return l.emit(o)
}

// emit adds o to the epoch's output, handing a full chunk to the
// committer.
func (l *Lane) emit(o task.Output) error {
	if l.outs == nil {
		l.outs = newOuts()
	}
	l.outs = append(l.outs, o)
	if len(l.outs) >= reportChunk {
		r := Report{Epoch: l.epoch, Lane: l.cfg.Global, Outs: l.outs}
		l.outs = newOuts()
		return l.report(r)
	}
	return nil
}

// report hands r to the committer. Records of an epoch after the one
// being produced are held by the committer until their transaction
// opens; they take credit of its budget first, so that a lane ahead of a
// slow one waits here rather than the committer's buffer growing. A
// report of the epoch being produced never waits for credit: the commit
// every held record waits for needs it.
func (l *Lane) report(r Report) error {
	sink, ctx := l.env.Sink, l.env.Ctx
	if len(r.Outs) > 0 && r.Epoch > sink.Committed.Load()+1 {
		n, err := sink.Held.Take(ctx, int64(len(r.Outs)))
		if err != nil {
			return err
		}
		r.Credit = n
	}
	select {
	case sink.Reports <- r:
		return nil
	case <-ctx.Done():
		if r.Credit > 0 {
			sink.Held.Give(r.Credit)
		}
		return ctx.Err()
	}
}

// laneMark is what routeChangelog stamps on a changelog record besides
// its partition: the hash of the key bytes that picked the lane for the
// record being processed when the store was written, if a key did.
type laneMark struct {
	hash  uint32
	laned bool
}

// laneMark is the mark of the record being processed now.
func (l *Lane) laneMark() laneMark {
	if _, _, _, laned := l.task.Laning(); !laned {
		return laneMark{}
	}
	return laneMark{hash: uint32(l.task.LaneHash()), laned: true}
}

// routeChangelog stamps a changelog record, which goes to the partition
// its task set (the task's partition, as in Kafka Streams: every write of
// one store key of a task, by a record, a timer or an emission pass,
// lands in that partition, in order), with m, the hash of the key bytes
// that picked the lane, which restoration routes by within the task.
func (l *Lane) routeChangelog(o *task.Output, m laneMark) {
	if m.laned {
		h := l.arena.bytes(4)
		binary.BigEndian.PutUint32(h, m.hash)
		hs := l.arena.headers(len(o.Headers) + 1)
		copy(hs, o.Headers)
		hs[len(o.Headers)] = processor.Header{Key: lane.HashHeader, Value: h}
		o.Headers = hs
	}
}

// outArena hands out the small slices a lane adds to its changelog
// records (the lane hash and the headers that carry it) from blocks, one
// allocation a block instead of two a record. A block is never reused:
// the garbage collector frees it once no record refers to it any more,
// so a slice lives as long as the record that holds it, wherever that
// goes. Each slice's capacity is its length, so an append to one cannot
// write into its neighbour.
type outArena struct {
	b  []byte
	hs []processor.Header
}

const (
	arenaBytes   = 4096
	arenaHeaders = 256
)

func (a *outArena) bytes(n int) []byte {
	if len(a.b) < n {
		a.b = make([]byte, max(arenaBytes, n))
	}
	b := a.b[:n:n]
	a.b = a.b[n:]
	return b
}

func (a *outArena) headers(n int) []processor.Header {
	if len(a.hs) < n {
		a.hs = make([]processor.Header, max(arenaHeaders, n))
	}
	hs := a.hs[:n:n]
	a.hs = a.hs[n:]
	return hs
}

func (l *Lane) forward(o task.Output) error {
	ctx := l.env.Ctx
	down := l.env.Downstream(o.Boundary.SourceNode)
	n := len(down.lanes)
	var idx int
	part := o.Partition
	if o.Boundary.Partitioner != nil && part >= 0 {
		idx = int(part) % n
	} else {
		h := o.KeyHash
		if !o.KeyHashed {
			h = lane.Murmur2(o.Key)
		}
		idx = lane.For32(h, n)
		part = int32(lane.For32(h, int(down.partitions)))
	}
	l.seq++
	it := Item{
		kind: itemRecord, from: down.slots[l.cfg.Global], floor: l.fwdFloor,
		in: task.Input{Topic: o.Topic, Partition: part, Offset: l.seq, Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Headers: o.Headers},
	}
	if l.cur.kind == itemRecord && l.cur.in.Topic != "" {
		it.in.Origin = l.origin()
	}
	dl := down.lanes[idx]
	if _, err := dl.credits[it.from].Take(ctx, 1); err != nil {
		if l.sendErr == nil {
			l.sendErr = err
		}
		return err
	}
	select {
	case dl.in <- []Item{it}:
		return nil
	case <-ctx.Done():
		if l.sendErr == nil {
			l.sendErr = ctx.Err()
		}
		return ctx.Err()
	}
}

// origin is the source-topic record the item in progress descends from.
func (l *Lane) origin() task.Origin {
	if l.cur.in.Origin.Topic != "" {
		return l.cur.in.Origin
	}
	return task.Origin{Topic: l.cur.in.Topic, Partition: l.cur.in.Partition, Offset: l.cur.in.Offset}
}

func (l *Lane) sendMarker(b *barrier.Barrier) error {
	ctx := l.env.Ctx
	for _, down := range l.group.downstream {
		it := Item{kind: itemMarker, from: down.slots[l.cfg.Global], b: b}
		for _, dl := range down.lanes {
			select {
			case dl.in <- []Item{it}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}
