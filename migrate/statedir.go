package migrate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/stoatflow/stoatctl/engine/state"
)

// The offline path: a Kafka Streams state directory (state.dir), read
// while Kafka Streams is stopped. What Kafka Streams 4.4 leaves there,
// from its source (RocksDBStore, AbstractSegments, KeyValueSegments,
// TimestampedSegments, RocksDBTimestampedStore, PrefixedWindowKeySchemas,
// AbstractColumnFamilyAccessor, OffsetCheckpoint) and checked against a
// directory real Kafka Streams 4.4 wrote (ks_test.go):
//
//	<state.dir>/<application.id>/.lock              the process's file lock
//	  <subtopology>_<partition>/                    a task; the partition is
//	                                                its changelogs' partition
//	    rocksdb/<store>/                            a key-value store: one
//	                                                RocksDB instance
//	    <store>/<store>.<segment start>/            a window or session store:
//	                                                one instance per segment,
//	                                                named segmentId x interval
//	    .checkpoint                                 changelog offsets of stores
//	                                                that do not keep their own
//
// Every RocksDB instance has the column family "offsets" (store-managed
// offsets, KIP-1035): the key "status" holds 1 while the store is open and
// 0 once it closed cleanly; "<changelog topic>-<partition>" holds the
// changelog offset the store is complete up to (8 bytes big-endian). The
// data is in "default", and for a timestamped store (a DSL table or
// aggregation, a timestamped window store) in "keyValueWithTimestamp",
// whose values are the 8-byte timestamp then the value; "default" then
// holds only entries written before an upgrade from a plain store, which
// carry no timestamp.
//
// Key layouts: a key-value store's key is the serialized key, as in its
// changelog; a window store's is the key, the start (8 bytes) and the
// sequence number (4), as in its changelog; a session store's the key, the
// end and the start (8 bytes each), as in its changelog. A window store
// emitting on window close (EmitStrategy.onWindowClose) is time-ordered
// (RocksDbIndexedTimeOrderedWindowBytesStoreSupplier): each entry is 0x00,
// the start, the key and the sequence number, with the timestamped value,
// and an index entry 0x01, the key, the start and the sequence number, with
// an empty value.

// Column families and keys of Kafka Streams' stores.
const (
	cfDefault     = "default"
	cfTimestamped = "keyValueWithTimestamp"
	cfOffsets     = "offsets"
	statusKey     = "status"
	// kvDir is the folder of a task's key-value stores (RocksDBStore's
	// DB_FILE_DIR).
	kvDir = "rocksdb"
)

// ErrStateDir is the class of a state directory that cannot be migrated
// from: Kafka Streams still running, a store not closed cleanly, a layout
// that is not Kafka Streams'. errors.Is finds it in a *StateDirError.
var ErrStateDir = errors.New("kafka streams state directory")

// StateDirError is a state directory, or a store or entry in it, that
// cannot be migrated from.
type StateDirError struct {
	// Path is the file or folder at fault.
	Path string
	// Key is the entry at fault, when there is one.
	Key []byte
	Err error
}

func (e *StateDirError) Error() string {
	if e.Key != nil {
		return fmt.Sprintf("%s: key %x: %v", e.Path, e.Key, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *StateDirError) Unwrap() error { return e.Err }

// Is makes every StateDirError an ErrStateDir, and one wrapping a decoding
// error of an entry an ErrCorrupt as well.
func (e *StateDirError) Is(target error) bool {
	return target == ErrStateDir || target == ErrCorrupt && e.Key != nil
}

// stateDir is the part of a Kafka Streams state directory that belongs to
// one application.
type stateDir struct {
	// root is <state.dir>/<application.id>.
	root   string
	app    string
	lib    *rocksLib
	stores map[string]*ksStore
}

// ksStore is one store of the state directory, in every task holding it.
type ksStore struct {
	name      string
	segmented bool
	// tasks maps a changelog partition to the store's folder in its task:
	// rocksdb/<store> or <store>.
	tasks map[int32]string
	// checkpoints are the .checkpoint offsets of the store's changelog
	// partitions, where a task has the file.
	checkpoints map[int32]int64
}

var taskDirName = regexp.MustCompile(`^([0-9]+)_([0-9]+)$`)

// openStateDir finds application app's folder in dir (dir itself when it
// is that folder: it holds task folders), refuses while a process holds its
// lock, and lists its stores.
func openStateDir(dir, app string, lib *rocksLib) (*stateDir, error) {
	root := filepath.Join(dir, app)
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		root = dir
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, &StateDirError{Path: dir, Err: err}
	}
	if err := checkUnlocked(filepath.Join(root, ".lock")); err != nil {
		return nil, err
	}
	d := &stateDir{root: root, app: app, lib: lib, stores: map[string]*ksStore{}}
	tasks := 0
	for _, e := range entries {
		m := taskDirName.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		tasks++
		part, err := strconv.ParseInt(m[2], 10, 32)
		if err != nil {
			return nil, &StateDirError{Path: filepath.Join(root, e.Name()), Err: fmt.Errorf("task partition: %w", err)}
		}
		if err := d.addTask(filepath.Join(root, e.Name()), int32(part)); err != nil {
			return nil, err
		}
	}
	if tasks == 0 {
		return nil, &StateDirError{Path: root, Err: fmt.Errorf("no task folders (<subtopology>_<partition>): not the state directory of %s", app)}
	}
	return d, nil
}

// addTask adds the stores of one task folder.
func (d *stateDir) addTask(task string, part int32) error {
	entries, err := os.ReadDir(task)
	if err != nil {
		return &StateDirError{Path: task, Err: err}
	}
	checkpoints, err := readCheckpoint(filepath.Join(task, ".checkpoint"))
	if err != nil {
		return err
	}
	add := func(name, path string, segmented bool) error {
		st := d.stores[name]
		if st == nil {
			st = &ksStore{name: name, segmented: segmented, tasks: map[int32]string{}, checkpoints: map[int32]int64{}}
			d.stores[name] = st
		}
		if prev, dup := st.tasks[part]; dup {
			return &StateDirError{Path: path, Err: fmt.Errorf("store %s of partition %d is in two tasks (and in %s)", name, part, prev)}
		}
		if st.segmented != segmented {
			return &StateDirError{Path: path, Err: fmt.Errorf("store %s is segmented in one task and not in another", name)}
		}
		st.tasks[part] = path
		if off, ok := checkpoints[changelogPartition{d.app + "-" + name + "-changelog", part}]; ok {
			st.checkpoints[part] = off
		}
		return nil
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(task, e.Name())
		if e.Name() == kvDir {
			kvs, err := os.ReadDir(path)
			if err != nil {
				return &StateDirError{Path: path, Err: err}
			}
			for _, kv := range kvs {
				if kv.IsDir() {
					if err := add(kv.Name(), filepath.Join(path, kv.Name()), false); err != nil {
						return err
					}
				}
			}
			continue
		}
		if err := add(e.Name(), path, true); err != nil {
			return err
		}
	}
	return nil
}

// changelogPartition is a changelog partition in a .checkpoint file.
type changelogPartition struct {
	topic string
	part  int32
}

// readCheckpoint reads a task's .checkpoint file (OffsetCheckpoint,
// version 0: the version, the entry count, then "topic partition offset"
// per line), by store; a missing file is no entries.
func readCheckpoint(path string) (map[changelogPartition]int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &StateDirError{Path: path, Err: err}
	}
	defer f.Close()
	bad := func(line int, format string, a ...any) error {
		return &StateDirError{Path: fmt.Sprintf("%s:%d", path, line), Err: fmt.Errorf(format, a...)}
	}
	out := map[changelogPartition]int64{}
	sc := bufio.NewScanner(f)
	line, want := 0, -1
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch line {
		case 1:
			if text != "0" {
				return nil, bad(line, "checkpoint version %q, only 0 is known", text)
			}
			continue
		case 2:
			n, err := strconv.Atoi(text)
			if err != nil || n < 0 {
				return nil, bad(line, "entry count %q", text)
			}
			want = n
			continue
		}
		if text == "" {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 {
			return nil, bad(line, "want \"topic partition offset\", got %q", text)
		}
		part, perr := strconv.ParseInt(f[1], 10, 32)
		off, oerr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil || oerr != nil {
			return nil, bad(line, "partition or offset of %q is not a number", text)
		}
		out[changelogPartition{f[0], int32(part)}] = off
	}
	if err := sc.Err(); err != nil {
		return nil, &StateDirError{Path: path, Err: err}
	}
	if want >= 0 && len(out) != want {
		return nil, bad(line, "%d entries, the header says %d", len(out), want)
	}
	return out, nil
}

// checkUnlocked refuses when a process holds the application folder's
// lock file: Kafka Streams (StateDirectory) holds it with a POSIX record
// lock for as long as it runs.
func checkUnlocked(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &StateDirError{Path: path, Err: err}
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return &StateDirError{Path: path, Err: fmt.Errorf("test the lock: %w", err)}
	}
	if lk.Type != syscall.F_UNLCK {
		return &StateDirError{Path: path, Err: fmt.Errorf("locked by process %d: Kafka Streams is still running on this state directory; stop it first", lk.Pid)}
	}
	return nil
}

// segments lists a segmented store's segment folders in one task, oldest
// first, checking each name is "<store>.<start>" with start a multiple of
// interval (Kafka Streams' segment interval: half the retention, at least
// a minute). A name off the interval means another retention, so another
// window size or grace.
func segments(dir, store string, interval int64) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, &StateDirError{Path: dir, Err: err}
	}
	type seg struct {
		start int64
		path  string
	}
	var out []seg
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		suffix, ok := strings.CutPrefix(e.Name(), store+".")
		start, err := strconv.ParseInt(suffix, 10, 64)
		if !ok || err != nil || start < 0 {
			return nil, &StateDirError{Path: filepath.Join(dir, e.Name()), Err: fmt.Errorf("not a segment of store %s (<store>.<segment start>)", store)}
		}
		if interval > 0 && start%interval != 0 {
			return nil, &StateDirError{Path: filepath.Join(dir, e.Name()), Err: fmt.Errorf("window size or grace mismatch: segment start %d is not a multiple of %d ms, the segment interval of our store's retention", start, interval)}
		}
		out = append(out, seg{start, filepath.Join(dir, e.Name())})
	}
	slices.SortFunc(out, func(a, b seg) int { return int(min(max(a.start-b.start, -1), 1)) })
	paths := make([]string, len(out))
	for i, s := range out {
		paths[i] = s.path
	}
	return paths, nil
}

// segmentInterval is Kafka Streams' segment interval for a windowed store
// of the given retention (Stores, RocksDbSessionBytesStoreSupplier,
// RocksDbIndexedTimeOrderedWindowBytesStoreSupplier).
func segmentInterval(retention int64) int64 { return max(retention/2, 60_000) }

// storeReader reads one store of the state directory as the changelog
// records that would rebuild it.
type storeReader struct {
	st   *ksStore
	kind Kind
	// timeOrdered is set for a window store emitting on window close.
	timeOrdered bool
	// interval is the segment interval a segmented store's folders must
	// fit, from our store's retention.
	interval int64
	// topic is the store's changelog topic, the key of its offsets.
	topic string
	// plainTime stamps the entries of stores that keep no timestamp (a
	// plain key-value store): Kafka Streams' stream time.
	plainTime int64
	lib       *rocksLib
}

// instances lists the RocksDB instances of the store in partition part.
func (r *storeReader) instances(part int32) ([]string, error) {
	dir, ok := r.st.tasks[part]
	if !ok {
		return nil, nil
	}
	if !r.st.segmented {
		return []string{dir}, nil
	}
	return segments(dir, r.st.name, r.interval)
}

// open opens one instance and checks it is a store Kafka Streams closed
// cleanly, in a layout this reader knows.
func (r *storeReader) open(path string) (*instance, error) {
	in, err := openInstance(r.lib, path)
	if err != nil {
		return nil, err
	}
	for _, cf := range in.families() {
		if cf != cfDefault && cf != cfTimestamped && cf != cfOffsets {
			in.close()
			return nil, &StateDirError{Path: path, Err: fmt.Errorf("column family %q: a store layout this migration does not read (only %s, %s and %s)", cf, cfDefault, cfTimestamped, cfOffsets)}
		}
	}
	status, ok, err := in.long(statusKey)
	if err == nil && ok && status != 0 {
		err = &StateDirError{Path: path, Err: fmt.Errorf("the store is open (status %d): Kafka Streams is running, or stopped without closing it; start it and stop it cleanly first", status)}
	}
	if err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// end is the changelog offset the store of partition part is complete up
// to, from its offsets column family (each segment holds it; the largest
// counts) or the task's .checkpoint, or -1 when neither says.
func (r *storeReader) end(part int32) (int64, error) {
	paths, err := r.instances(part)
	if err != nil {
		return 0, err
	}
	end := int64(-1)
	if off, ok := r.st.checkpoints[part]; ok {
		end = off
	}
	for _, p := range paths {
		in, err := r.open(p)
		if err != nil {
			return 0, err
		}
		off, ok, err := in.long(fmt.Sprintf("%s-%d", r.topic, part))
		in.close()
		if err != nil {
			return 0, err
		}
		if ok && off >= 0 {
			end = max(end, off)
		}
	}
	return end, nil
}

// each calls fn with every entry of the store in partition part, laid out
// as its changelog record: key, value (never nil), timestamp. path names
// the instance, for errors.
func (r *storeReader) each(part int32, fn func(path string, key, value []byte, ts int64) error) error {
	paths, err := r.instances(part)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := r.eachIn(p, fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *storeReader) eachIn(path string, fn func(path string, key, value []byte, ts int64) error) error {
	in, err := r.open(path)
	if err != nil {
		return err
	}
	defer in.close()
	timestamped := slices.Contains(in.families(), cfTimestamped)
	if timestamped {
		// Entries in "default" next to "keyValueWithTimestamp" were
		// written before an upgrade from a plain store and carry no
		// timestamp; Kafka Streams reads them as timestamp -1, which no
		// changelog record can carry.
		legacy := 0
		if err := in.each(cfDefault, func([]byte, []byte) error { legacy++; return nil }); err != nil {
			return err
		}
		if legacy > 0 {
			return &StateDirError{Path: path, Err: fmt.Errorf("%d entries without timestamps in %q (written before an upgrade to a timestamped store): let Kafka Streams rewrite them, or migrate from the changelog", legacy, cfDefault)}
		}
	}
	var cf string
	var lay entryLayout
	switch {
	case r.kind == KeyValue && timestamped:
		cf, lay = cfTimestamped, layoutTimestamped
	case r.kind == KeyValue:
		cf, lay = cfDefault, layoutPlain
	case r.kind == Window && r.timeOrdered:
		if timestamped {
			return &StateDirError{Path: path, Err: fmt.Errorf("our store emits on window close, but this is not Kafka Streams' time-ordered window store (it has %q): the topologies differ", cfTimestamped)}
		}
		cf, lay = cfDefault, layoutTimeOrderedWindow
	case r.kind == Window && timestamped:
		cf, lay = cfTimestamped, layoutTimestamped
	case r.kind == Window:
		cf, lay = cfDefault, layoutPlainWindow
	case r.kind == Session && r.timeOrdered:
		return &StateDirError{Path: path, Err: errors.New("a session store emitted on window close is time-ordered in Kafka Streams, a layout this migration does not read: migrate it from its changelog")}
	case r.kind == Session:
		cf, lay = cfDefault, layoutSession
	default:
		return fmt.Errorf("migrate: store kind %s has no state directory layout", r.kind)
	}
	return in.each(cf, func(k, v []byte) error {
		key, value, ts, skip, err := lay.toChangelog(k, v, r.plainTime)
		if err != nil {
			return &StateDirError{Path: path, Key: k, Err: err}
		}
		if skip {
			return nil
		}
		return fn(path, key, value, ts)
	})
}

// entryLayout is how one store entry of Kafka Streams' is laid out.
type entryLayout int

const (
	// layoutPlain: the key, the value (a plain key-value store); the
	// entry carries no timestamp.
	layoutPlain entryLayout = iota
	// layoutTimestamped: the key, the 8-byte timestamp then the value (a
	// timestamped key-value or window store).
	layoutTimestamped
	// layoutTimeOrderedWindow: 0x00, the start, the key, the sequence
	// number, with a timestamped value; or an index entry 0x01, the key,
	// the start, the sequence number, with an empty value.
	layoutTimeOrderedWindow
	// layoutPlainWindow: the key, the start, the sequence number, the
	// value; stamped with the start.
	layoutPlainWindow
	// layoutSession: the key, the end, the start, the value; stamped with
	// the end.
	layoutSession
)

// toChangelog turns a store entry into the changelog record that would
// rebuild it: key, value, timestamp; skip is set for an index entry. plain
// stamps entries that carry no time.
func (l entryLayout) toChangelog(k, v []byte, plain int64) (key, value []byte, ts int64, skip bool, err error) {
	switch l {
	case layoutPlain:
		return k, v, plain, false, nil
	case layoutTimestamped:
		value, ts, err := splitTimestamp(v)
		return k, value, ts, false, err
	case layoutTimeOrderedWindow:
		if len(k) > 0 && k[0] == 1 && len(v) == 0 {
			return nil, nil, 0, true, nil
		}
		if len(k) < 1+8+4 || k[0] != 0 {
			return nil, nil, 0, false, errors.New("not a time-ordered window entry (0x00, start, key, sequence number)")
		}
		start := int64(binary.BigEndian.Uint64(k[1:9]))
		inner := k[9 : len(k)-4]
		seq := int32(binary.BigEndian.Uint32(k[len(k)-4:]))
		value, ts, err := splitTimestamp(v)
		if err != nil {
			return nil, nil, 0, false, err
		}
		return state.EncodeWindowKey(inner, start, seq), value, ts, false, nil
	case layoutPlainWindow:
		_, start, _, err := state.DecodeWindowKey(k)
		return k, v, start, false, err
	case layoutSession:
		_, _, end, err := state.DecodeSessionKey(k)
		return k, v, end, false, err
	}
	return nil, nil, 0, false, fmt.Errorf("unknown entry layout %d", l)
}

func splitTimestamp(v []byte) ([]byte, int64, error) {
	if len(v) < 8 {
		return nil, 0, fmt.Errorf("timestamped value of %d bytes: %w", len(v), state.ErrValueTooShort)
	}
	return v[8:], int64(binary.BigEndian.Uint64(v)), nil
}
