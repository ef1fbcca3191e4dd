package broker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Recovery of transactions a killed broker left open.
//
// kfake reloads a partition whose snapshot no longer matches its segments
// (the broker was killed, not closed) by replaying the segments, and it
// treats a transaction that has records but no end marker as aborted: it
// adds the range to the partition's aborted-transaction index and bumps the
// producer's epoch, but it writes no abort marker into the log. A
// read_committed consumer handed that index entry skips every
// transactional batch of that producer id from the entry's first offset
// until it meets an abort marker of the same producer id, and none ever
// comes: every later transaction of the transactional id (which keeps its
// producer id) is hidden, committed or not. See
// docs/decisions/0003-embedded-broker-open-transactions-after-kill.md.
//
// recoverTxns writes the missing markers: it reads every partition
// read_committed from its start, pairs each aborted-transaction entry it
// is handed with the next abort marker of its producer id, and writes an
// abort marker (WriteTxnMarkers) for each entry left without one. It runs
// before the broker serves anyone (see gate), so no producer can begin a
// transaction that the marker would end.

// recoverTimeout bounds the recovery when Start's context has no deadline.
const recoverTimeout = 5 * time.Minute

// recoverFetchBytes is the most one recovery fetch asks for.
const recoverFetchBytes = 16 << 20

// danglingAbort is an aborted-transaction entry of a partition's index
// that no abort marker of its producer id ends.
type danglingAbort struct {
	topic     string
	partition int32
	leader    int32
	pid       int64
	epoch     int16 // the epoch of the producer id's last transactional batch
	first     int64 // the entry's first offset
	// later is set when the producer id wrote transactions after the
	// entry: their records were already hidden from read_committed
	// consumers, and the marker, written at the end, cannot show them.
	later bool
	// reproduced is set when the entry's records belong to a commit a
	// kill cut short, and finishCommits committed copies of them.
	reproduced bool
}

func recoverTxns(ctx context.Context, cl *kgo.Client, intents *intentLog, newTxnClient func(...kgo.Opt) (*kgo.Client, error), logger *slog.Logger) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, recoverTimeout)
		defer cancel()
	}
	adm := kadm.NewClient(cl)
	md, err := adm.Metadata(ctx)
	if err != nil {
		return fmt.Errorf("recover open transactions: metadata: %w", err)
	}
	starts, err := adm.ListStartOffsets(ctx)
	if err != nil {
		return fmt.Errorf("recover open transactions: start offsets: %w", err)
	}
	var scans []*partScan
	for _, topic := range md.Topics.Names() {
		td := md.Topics[topic]
		if td.Err != nil {
			return fmt.Errorf("recover open transactions: topic %s: %w", topic, td.Err)
		}
		for _, p := range slices.Sorted(maps.Keys(td.Partitions)) {
			start, ok := starts.Lookup(topic, p)
			if !ok || start.Err != nil {
				return fmt.Errorf("recover open transactions: start offset of %s[%d]: %v", topic, p, start.Err)
			}
			ps, err := scanPartition(ctx, cl, td.ID, topic, p, td.Partitions[p].Leader, start.Offset, logger)
			if err != nil {
				return fmt.Errorf("recover open transactions: %s[%d]: %w", topic, p, err)
			}
			scans = append(scans, ps)
		}
	}
	if intents != nil {
		if err := finishCommits(ctx, cl, md, scans, intents, newTxnClient, logger); err != nil {
			return fmt.Errorf("recover open transactions: %w", err)
		}
	}
	var dangling []danglingAbort
	for _, ps := range scans {
		dangling = append(dangling, ps.dangling...)
	}
	if len(dangling) > 0 {
		if err := writeAbortMarkers(ctx, cl, dangling); err != nil {
			return fmt.Errorf("recover open transactions: %w", err)
		}
	}
	for _, d := range dangling {
		args := []any{"component", "broker", "topic", d.topic, "partition", d.partition, "producer_id", d.pid, "first_offset", d.first}
		switch {
		case d.reproduced:
			logger.Warn("wrote the abort marker of the records of a commit cut short by an unclean stop; their copies are committed", args...)
		case d.later:
			logger.Warn("wrote the abort marker of a transaction left open by an unclean stop; "+
				"this producer id's transactions written after it before this repair stay hidden from read_committed consumers", args...)
		default:
			logger.Warn("wrote the abort marker of a transaction left open by an unclean stop", args...)
		}
	}
	if intents != nil {
		// Every commit intent is now finished or known to be done.
		if err := intents.compact(); err != nil {
			return fmt.Errorf("recover open transactions: %w", err)
		}
	}
	return nil
}

// partScan is what scanPartition found in one partition.
type partScan struct {
	topic     string
	id        kadm.TopicID
	partition int32
	leader    int32
	hw        int64
	dangling  []danglingAbort
	// markers are the end markers in the log, by producer id and epoch.
	markers map[producerRef]markerKinds
}

// markerKinds says which end markers a producer id wrote at an epoch.
type markerKinds struct{ commit, abort bool }

// scanPartition reads a partition read_committed from start to its end
// and returns the aborted-transaction entries no abort marker ends. A
// partition with a transaction open (its last stable offset below its
// high watermark: kfake restored a transaction a clean stop left open) is
// left alone: its entries and markers past the last stable offset are out
// of a read_committed fetch's reach, so an entry could look dangling that
// is not.
func scanPartition(ctx context.Context, cl *kgo.Client, id kadm.TopicID, topic string, p, leader int32, start int64, logger *slog.Logger) (*partScan, error) {
	ps := &partScan{topic: topic, id: id, partition: p, leader: leader, markers: map[producerRef]markerKinds{}}
	var (
		entries = make(map[int64]map[int64]bool) // pid -> first offsets of aborted entries
		aborts  = make(map[int64][]int64)        // pid -> offsets of abort markers
		ends    = make(map[int64][]int64)        // pid -> offsets of all markers
		epochs  = make(map[int64]int16)          // pid -> epoch of its last transactional batch
		off     = start
	)
	for {
		part, err := fetchAt(ctx, cl, id, topic, p, leader, off, 1) // read_committed: the response carries the aborted-transaction entries
		if err != nil {
			return nil, err
		}
		ps.hw = part.HighWatermark
		if part.LastStableOffset < part.HighWatermark {
			logger.Debug("not checked for transactions left open: one is open", "component", "broker",
				"topic", topic, "partition", p, "last_stable_offset", part.LastStableOffset, "high_watermark", part.HighWatermark)
			return &partScan{topic: topic, id: id, partition: p, leader: leader, markers: map[producerRef]markerKinds{}}, nil
		}
		for _, at := range part.AbortedTransactions {
			if entries[at.ProducerID] == nil {
				entries[at.ProducerID] = make(map[int64]bool)
			}
			entries[at.ProducerID][at.FirstOffset] = true
		}
		next, err := eachBatch(part.RecordBatches, func(b *kmsg.RecordBatch) error {
			if b.Attributes&0x0010 == 0 { // not transactional
				return nil
			}
			if b.Attributes&0x0020 == 0 { // data
				epochs[b.ProducerID] = b.ProducerEpoch
				return nil
			}
			ends[b.ProducerID] = append(ends[b.ProducerID], b.FirstOffset)
			abort, err := isAbortMarker(b)
			if err != nil {
				return fmt.Errorf("control batch at offset %d: %w", b.FirstOffset, err)
			}
			ref := producerRef{b.ProducerID, b.ProducerEpoch}
			m := ps.markers[ref]
			m.commit, m.abort = m.commit || !abort, m.abort || abort
			ps.markers[ref] = m
			if abort {
				aborts[b.ProducerID] = append(aborts[b.ProducerID], b.FirstOffset)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if next < 0 && off >= part.HighWatermark {
			break // nothing from off on
		}
		if next >= part.HighWatermark {
			break
		}
		if next <= off {
			// No whole batch came back: an entry seen so far could
			// have its marker further on, so judge none of them.
			logger.Warn("not checked for transactions left open: a fetch returned no whole record batch", "component", "broker",
				"topic", topic, "partition", p, "offset", off, "high_watermark", part.HighWatermark)
			return &partScan{topic: topic, id: id, partition: p, leader: leader, markers: map[producerRef]markerKinds{}}, nil
		}
		off = next
	}

	for _, pid := range slices.Sorted(maps.Keys(entries)) {
		firsts := slices.Sorted(maps.Keys(entries[pid]))
		for i, first := range firsts {
			// The entry's marker is the producer id's first abort
			// marker after it, and it comes before the producer id's
			// next aborted transaction starts.
			bound := int64(-1)
			if i+1 < len(firsts) {
				bound = firsts[i+1]
			}
			j, _ := slices.BinarySearch(aborts[pid], first+1)
			if j < len(aborts[pid]) && (bound < 0 || aborts[pid][j] < bound) {
				continue
			}
			k, _ := slices.BinarySearch(ends[pid], first+1)
			ps.dangling = append(ps.dangling, danglingAbort{
				topic: topic, partition: p, leader: leader,
				pid: pid, epoch: epochs[pid], first: first,
				later: k < len(ends[pid]),
			})
		}
	}
	return ps, nil
}

// fetchAt fetches one partition from off at an isolation level (0
// read_uncommitted, 1 read_committed) from its leader.
func fetchAt(ctx context.Context, cl *kgo.Client, id kadm.TopicID, topic string, p, leader int32, off int64, isolation int8) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes = recoverFetchBytes
	req.IsolationLevel = isolation
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = off
	rp.PartitionMaxBytes = recoverFetchBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
	if err != nil {
		return nil, fmt.Errorf("fetch from offset %d: %w", off, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch from offset %d: %w", off, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("fetch from offset %d: the response is not for this one partition", off)
	}
	part := &resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch from offset %d: %w", off, err)
	}
	return part, nil
}

// eachBatch calls fn on every whole record batch of a fetch response's
// record bytes, and returns the offset after the last one.
func eachBatch(raw []byte, fn func(*kmsg.RecordBatch) error) (int64, error) {
	next := int64(-1)
	for len(raw) >= 12 {
		// A batch starts with its first offset (8 bytes) and the length
		// of what follows the length (4 bytes).
		n := 12 + int(int32(binary.BigEndian.Uint32(raw[8:12])))
		if n < 12 || n > len(raw) {
			break // a partial batch at the end of the response
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw[:n]); err != nil {
			return 0, fmt.Errorf("record batch at offset %d: %w", int64(binary.BigEndian.Uint64(raw[:8])), err)
		}
		if err := fn(&b); err != nil {
			return 0, err
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		raw = raw[n:]
	}
	return next, nil
}

// isAbortMarker reports whether a control batch is an abort marker.
func isAbortMarker(b *kmsg.RecordBatch) (bool, error) {
	var rec kmsg.Record
	if err := rec.ReadFrom(b.Records); err != nil {
		return false, err
	}
	var key kmsg.ControlRecordKey
	if err := key.ReadFrom(rec.Key); err != nil {
		return false, err
	}
	return key.Type == kmsg.ControlRecordKeyTypeAbort, nil
}

// writeAbortMarkers writes one abort marker for each dangling entry, to
// the partition's leader.
func writeAbortMarkers(ctx context.Context, cl *kgo.Client, dangling []danglingAbort) error {
	byLeader := make(map[int32][]danglingAbort)
	for _, d := range dangling {
		byLeader[d.leader] = append(byLeader[d.leader], d)
	}
	var errs []error
	for _, leader := range slices.Sorted(maps.Keys(byLeader)) {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		for _, d := range byLeader[leader] {
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = d.pid, d.epoch, false
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic = d.topic
			mt.Partitions = []int32{d.partition}
			m.Topics = append(m.Topics, mt)
			req.Markers = append(req.Markers, m)
		}
		resp, err := req.RequestWith(ctx, cl.Broker(int(leader)))
		if err != nil {
			errs = append(errs, fmt.Errorf("write abort markers on node %d: %w", leader, err))
			continue
		}
		for _, m := range resp.Markers {
			for _, t := range m.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						errs = append(errs, fmt.Errorf("write abort marker of producer id %d to %s[%d]: %w", m.ProducerID, t.Topic, p.Partition, err))
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// gate holds a broker's listeners shut to the network while recoverTxns
// runs: a listener hands kfake only the in-memory connections that dial
// makes until open is called. Clients that connect meanwhile wait in the
// listen backlog, as for a broker still loading its log.
type gate struct {
	mu        sync.Mutex
	opened    bool
	listeners map[string]*gatedListener // by port
}

type gatedListener struct {
	net.Listener
	pipes     chan net.Conn
	open      chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

// wrap gates ln, unless the gate is already open (a node added later).
func (g *gate) wrap(ln net.Listener) (net.Listener, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened {
		return ln, nil
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	gl := &gatedListener{Listener: ln, pipes: make(chan net.Conn), open: make(chan struct{}), closed: make(chan struct{})}
	if g.listeners == nil {
		g.listeners = make(map[string]*gatedListener)
	}
	g.listeners[port] = gl
	return gl, nil
}

// open lets every listener accept from the network. It is safe to call
// more than once.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.opened {
		return
	}
	g.opened = true
	for _, gl := range g.listeners {
		close(gl.open)
	}
}

// dial connects to the node listening on addr's port in memory, past the
// gate: a kgo.Dialer for the recovery's client.
func (g *gate) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	gl := g.listeners[port]
	g.mu.Unlock()
	if gl == nil {
		return nil, fmt.Errorf("dial %s: no node of this broker listens there", addr)
	}
	server, client := net.Pipe()
	select {
	case gl.pipes <- server:
		return client, nil
	case <-gl.open:
	case <-gl.closed:
	case <-ctx.Done():
		server.Close()
		client.Close()
		return nil, ctx.Err()
	}
	server.Close()
	client.Close()
	return nil, fmt.Errorf("dial %s: the broker no longer takes in-memory connections", addr)
}

func (l *gatedListener) Accept() (net.Conn, error) {
	select {
	case <-l.open:
		return l.Listener.Accept()
	default:
	}
	select {
	case c := <-l.pipes:
		return c, nil
	case <-l.open:
		return l.Listener.Accept()
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *gatedListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}
