package broker

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Commit intents: what makes a commit that a kill interrupts finish.
//
// kfake ends a transaction by writing the commit marker of each partition
// in turn and then applying the transaction's offsets to their groups, with
// nothing written first that says the transaction is committing (Apache
// Kafka's PREPARE_COMMIT). A SIGKILL in between leaves some partitions
// committed, the rest open (and aborted by the reload), and the offsets
// lost. So the broker keeps its own log, in the data directory: before
// kfake handles an EndTxn that commits, the broker appends a commit intent
// naming the producer id and epoch and the offsets the transaction carries
// (seen in its TxnOffsetCommit requests). The next request of the same
// producer, which kfake can only handle once the EndTxn is done, appends
// done. On start, a commit intent without done is a commit that may have
// been cut short, and recoverTxns finishes it (see finishCommits).
// docs/decisions/0012 has the reasoning.

// intentFile is the commit-intent log's name in the data directory.
const intentFile = "stoatctl-txn-intents.log"

// intentCompactBytes is the log size past which it is rewritten with only
// the intents not yet done.
const intentCompactBytes = 4 << 20

// Intent operations.
const (
	opCommit = "commit" // an EndTxn asked to commit PID at Epoch with Offsets
	opDone   = "done"   // PID's last commit finished (a later request of it came)
	// opReproducing: the repair transaction By is about to commit the
	// records of PID at Epoch that the cut-short commit left open.
	opReproducing = "reproducing"
)

// intentEntry is one line of the commit-intent log.
type intentEntry struct {
	Op      string        `json:"op"`
	PID     int64         `json:"pid"`
	Epoch   int16         `json:"epoch"`
	TxID    string        `json:"txid,omitempty"`
	Offsets []groupOffset `json:"offsets,omitempty"`
	By      *producerRef  `json:"by,omitempty"`
}

// producerRef names a producer id at an epoch.
type producerRef struct {
	PID   int64 `json:"pid"`
	Epoch int16 `json:"epoch"`
}

// groupOffset is one offset a transaction commits for a group. TopicID is
// set (hex) when the request named the topic by id only (TxnOffsetCommit
// v6+).
type groupOffset struct {
	Group       string  `json:"group"`
	Topic       string  `json:"topic,omitempty"`
	TopicID     string  `json:"topic_id,omitempty"`
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	LeaderEpoch int32   `json:"leader_epoch"`
	Metadata    *string `json:"metadata,omitempty"`
}

// decodeIntents parses the log: one JSON object per line. A last line
// without its newline is a write a kill cut short, and is dropped; any
// other line that does not parse is an error naming it.
func decodeIntents(raw []byte) ([]intentEntry, error) {
	var out []intentEntry
	for line := 1; len(raw) > 0; line++ {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break // torn tail
		}
		var e intentEntry
		dec := json.NewDecoder(bytes.NewReader(raw[:i]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("line %d: more than one entry", line)
		}
		switch e.Op {
		case opCommit, opDone:
		case opReproducing:
			if e.By == nil {
				return nil, fmt.Errorf("line %d: %s without the repair producer", line, e.Op)
			}
		default:
			return nil, fmt.Errorf("line %d: unknown op %q", line, e.Op)
		}
		out = append(out, e)
		raw = raw[i+1:]
	}
	return out, nil
}

// intentState is what a log says: the commits not known to be done, and
// what the repair did about them.
type intentState struct {
	// pending is the last commit intent of each producer id with no done
	// after it.
	pending map[int64]intentEntry
	// committed holds every producer id and epoch the log has a commit
	// intent for, done or not.
	committed map[producerRef]bool
	// reproducing is, per pending producer id, the repair transaction
	// last logged as about to commit its open records.
	reproducing map[int64]producerRef
}

func replayIntents(entries []intentEntry) intentState {
	s := intentState{pending: map[int64]intentEntry{}, committed: map[producerRef]bool{}, reproducing: map[int64]producerRef{}}
	for _, e := range entries {
		s.apply(e)
	}
	return s
}

func (s *intentState) apply(e intentEntry) {
	switch e.Op {
	case opCommit:
		s.pending[e.PID] = e
		s.committed[producerRef{e.PID, e.Epoch}] = true
		delete(s.reproducing, e.PID)
	case opDone:
		delete(s.pending, e.PID)
		delete(s.reproducing, e.PID)
	case opReproducing:
		if p, ok := s.pending[e.PID]; ok && p.Epoch == e.Epoch {
			s.reproducing[e.PID] = *e.By
		}
	}
}

// intentLog appends to the log from kfake's control hooks. kfake runs one
// control function at a time, but each on a goroutine of its own, hence
// the mutex.
type intentLog struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	sync  bool
	size  int64
	err   error                              // the first write error; EndTxn commits fail from then on
	open  map[int64]map[string][]groupOffset // pid -> group -> offsets its open transaction commits
	state intentState                        // pending and done, as logged so far
	txids map[string]int64                   // transactional id -> pid of its last commit intent
}

// openIntentLog reads the log in dir and opens it for appending.
func openIntentLog(dir string, syncWrites bool) (*intentLog, error) {
	path := filepath.Join(dir, intentFile)
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("commit intents: %w", err)
	}
	entries, err := decodeIntents(raw)
	if err != nil {
		return nil, fmt.Errorf("commit intents %s: %w", path, err)
	}
	l := &intentLog{path: path, sync: syncWrites, open: map[int64]map[string][]groupOffset{}, state: replayIntents(entries), txids: map[string]int64{}}
	for _, e := range entries {
		if e.Op == opCommit && e.TxID != "" {
			l.txids[e.TxID] = e.PID
		}
	}
	// A torn tail is cut off, so the next entry starts on a line of its own.
	if n := bytes.LastIndexByte(raw, '\n') + 1; n < len(raw) {
		if err := os.Truncate(path, int64(n)); err != nil {
			return nil, fmt.Errorf("commit intents: cut the torn last line of %s: %w", path, err)
		}
		raw = raw[:n]
	}
	if l.f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("commit intents: %w", err)
	}
	l.size = int64(len(raw))
	return l, nil
}

func (l *intentLog) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// pendingState is a copy of what the log says is not done.
func (l *intentLog) pendingState() intentState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return intentState{pending: maps.Clone(l.state.pending), committed: maps.Clone(l.state.committed), reproducing: maps.Clone(l.state.reproducing)}
}

// appendLocked writes e and applies it to the state.
func (l *intentLog) appendLocked(e intentEntry) error {
	if l.err != nil {
		return l.err
	}
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := l.f.Write(line); err != nil {
		l.err = fmt.Errorf("commit intents %s: %w", l.path, err)
		return l.err
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			l.err = fmt.Errorf("commit intents %s: %w", l.path, err)
			return l.err
		}
	}
	l.size += int64(len(line))
	l.state.apply(e)
	if e.Op == opCommit && e.TxID != "" {
		l.txids[e.TxID] = e.PID
	}
	return nil
}

// appendReproducing logs that the repair transaction by is about to
// commit the open records of the intent c.
func (l *intentLog) appendReproducing(c intentEntry, by producerRef) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appendLocked(intentEntry{Op: opReproducing, PID: c.PID, Epoch: c.Epoch, By: &by})
}

// doneLocked logs that pid's pending commit, if it has one, finished.
func (l *intentLog) doneLocked(pid int64) {
	if _, ok := l.state.pending[pid]; !ok {
		return
	}
	_ = l.appendLocked(intentEntry{Op: opDone, PID: pid})
	l.maybeCompactLocked()
}

// done is doneLocked for the repair, outside the hooks.
func (l *intentLog) done(pid int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.doneLocked(pid)
}

// maybeCompactLocked rewrites a log grown past intentCompactBytes with
// only the commits not done, through a new file renamed over the old one.
func (l *intentLog) maybeCompactLocked() {
	if l.size < intentCompactBytes || l.err != nil {
		return
	}
	if err := l.rewriteLocked(); err != nil {
		l.err = err
	}
}

// compact rewrites the log with only what is not done; the repair calls
// it once it has finished every cut-short commit.
func (l *intentLog) compact() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.rewriteLocked()
}

func (l *intentLog) rewriteLocked() error {
	var buf bytes.Buffer
	for _, pid := range slices.Sorted(maps.Keys(l.state.pending)) {
		keep := []intentEntry{l.state.pending[pid]}
		if by, ok := l.state.reproducing[pid]; ok {
			keep = append(keep, intentEntry{Op: opReproducing, PID: pid, Epoch: l.state.pending[pid].Epoch, By: &by})
		}
		for _, e := range keep {
			line, err := json.Marshal(e)
			if err != nil {
				return err
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
	}
	tmp := l.path + ".tmp"
	if err := writeSynced(tmp, buf.Bytes()); err != nil {
		return fmt.Errorf("commit intents: compact: %w", err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fmt.Errorf("commit intents: compact: %w", err)
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("commit intents: compact: %w", err)
	}
	l.f.Close()
	l.f, l.size = f, int64(buf.Len())
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// install adds the hooks to c. Each lets kfake handle the request as it
// would without them, except an EndTxn that commits when the intent could
// not be written: that one fails with KAFKA_STORAGE_ERROR, so that no
// commit runs that a kill could cut short unnoticed.
func (l *intentLog) install(c *kfake.Cluster) {
	hook := func(key kmsg.Key, fn func(kmsg.Request) kmsg.Response) {
		c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			l.mu.Lock()
			defer l.mu.Unlock()
			if resp := fn(req); resp != nil {
				return resp, nil, true
			}
			return nil, nil, false
		})
	}
	hook(kmsg.EndTxn, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.EndTxnRequest)
		l.doneLocked(req.ProducerID)
		offsets := l.open[req.ProducerID]
		delete(l.open, req.ProducerID)
		if !req.Commit {
			return nil
		}
		e := intentEntry{Op: opCommit, PID: req.ProducerID, Epoch: req.ProducerEpoch, TxID: req.TransactionalID}
		for _, g := range slices.Sorted(maps.Keys(offsets)) {
			e.Offsets = append(e.Offsets, offsets[g]...)
		}
		if err := l.appendLocked(e); err != nil {
			resp := req.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode = kerr.KafkaStorageError.Code
			return resp
		}
		return nil
	})
	hook(kmsg.TxnOffsetCommit, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.TxnOffsetCommitRequest)
		l.doneLocked(req.ProducerID)
		byGroup := l.open[req.ProducerID]
		if byGroup == nil {
			byGroup = map[string][]groupOffset{}
			l.open[req.ProducerID] = byGroup
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				o := groupOffset{Group: req.Group, Topic: t.Topic, Partition: p.Partition, Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: p.Metadata}
				if t.Topic == "" {
					o.TopicID = hex.EncodeToString(t.TopicID[:])
				}
				byGroup[req.Group] = setOffset(byGroup[req.Group], o)
			}
		}
		return nil
	})
	hook(kmsg.Produce, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.ProduceRequest)
		if req.TransactionID == nil || len(l.state.pending) == 0 {
			return nil
		}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				// A record batch's producer id is at byte 43 (after base
				// offset, length, leader epoch, magic, crc, attributes,
				// last offset delta and the two timestamps).
				if len(p.Records) >= 51 {
					l.doneLocked(int64(binary.BigEndian.Uint64(p.Records[43:51])))
				}
			}
		}
		return nil
	})
	hook(kmsg.AddPartitionsToTxn, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AddPartitionsToTxnRequest)
		l.doneLocked(req.ProducerID)
		for _, t := range req.Transactions {
			l.doneLocked(t.ProducerID)
		}
		return nil
	})
	hook(kmsg.AddOffsetsToTxn, func(r kmsg.Request) kmsg.Response {
		l.doneLocked(r.(*kmsg.AddOffsetsToTxnRequest).ProducerID)
		return nil
	})
	hook(kmsg.InitProducerID, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.InitProducerIDRequest)
		if req.TransactionalID != nil {
			if pid, ok := l.txids[*req.TransactionalID]; ok {
				l.doneLocked(pid)
			}
		}
		l.doneLocked(req.ProducerID)
		return nil
	})
	// Offsets set outside a transaction (a reset by an operator, a
	// deleted group) win over a pending intent's: the repair must not
	// move them back.
	hook(kmsg.OffsetCommit, func(r kmsg.Request) kmsg.Response {
		l.doneForGroupLocked(r.(*kmsg.OffsetCommitRequest).Group)
		return nil
	})
	hook(kmsg.DeleteGroups, func(r kmsg.Request) kmsg.Response {
		for _, g := range r.(*kmsg.DeleteGroupsRequest).Groups {
			l.doneForGroupLocked(g)
		}
		return nil
	})
}

// doneForGroupLocked marks done every pending commit with offsets of group.
func (l *intentLog) doneForGroupLocked(group string) {
	for _, pid := range slices.Sorted(maps.Keys(l.state.pending)) {
		if slices.ContainsFunc(l.state.pending[pid].Offsets, func(o groupOffset) bool { return o.Group == group }) {
			l.doneLocked(pid)
		}
	}
}

// setOffset replaces the offset of o's partition in list, or adds it: a
// transaction that commits a partition's offset twice commits the last.
func setOffset(list []groupOffset, o groupOffset) []groupOffset {
	for i := range list {
		if list[i].Topic == o.Topic && list[i].TopicID == o.TopicID && list[i].Partition == o.Partition {
			list[i] = o
			return list
		}
	}
	return append(list, o)
}
