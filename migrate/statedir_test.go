package migrate

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/state"
)

// The state directory's parts that need no RocksDB: the entry layouts, the
// .checkpoint file, the folder layout and the lock. Reading real stores
// that Kafka Streams 4.4 wrote is TestKafkaStreamsCutoverFromStateDir's.

func TestEntryLayouts(t *testing.T) {
	ts := be(8, 1_700_000_000_123)
	windowKey := state.EncodeWindowKey([]byte("/home"), 1_700_000_040_000, 0)
	timeOrdered := cat([]byte{0}, be(8, 1_700_000_040_000), []byte("/home"), be(4, 0))
	index := cat([]byte{1}, []byte("/home"), be(8, 1_700_000_040_000), be(4, 0))
	sessionKey := state.EncodeSessionKey([]byte("bob"), 100, 900)
	for _, tc := range []struct {
		name       string
		layout     entryLayout
		key, value []byte
		wantKey    []byte
		wantValue  []byte
		wantTs     int64
		skip       bool
		err        string
	}{
		{name: "plain key-value", layout: layoutPlain, key: []byte("bob"), value: be(8, 3), wantKey: []byte("bob"), wantValue: be(8, 3), wantTs: 42},
		{name: "plain empty value", layout: layoutPlain, key: []byte("bob"), value: []byte{}, wantKey: []byte("bob"), wantValue: []byte{}, wantTs: 42},
		{name: "timestamped", layout: layoutTimestamped, key: []byte("u1"), value: cat(ts, []byte("Alice")), wantKey: []byte("u1"), wantValue: []byte("Alice"), wantTs: 1_700_000_000_123},
		{name: "timestamped short", layout: layoutTimestamped, key: []byte("u1"), value: []byte{1, 2}, err: "too short"},
		{name: "time-ordered window", layout: layoutTimeOrderedWindow, key: timeOrdered, value: cat(ts, be(8, 3)), wantKey: windowKey, wantValue: be(8, 3), wantTs: 1_700_000_000_123},
		{name: "time-ordered index", layout: layoutTimeOrderedWindow, key: index, value: []byte{}, skip: true},
		{name: "time-ordered bad prefix", layout: layoutTimeOrderedWindow, key: cat([]byte{2}, timeOrdered[1:]), value: cat(ts, be(8, 3)), err: "not a time-ordered"},
		{name: "time-ordered short key", layout: layoutTimeOrderedWindow, key: []byte{0, 1, 2}, value: cat(ts, be(8, 3)), err: "not a time-ordered"},
		{name: "plain window", layout: layoutPlainWindow, key: windowKey, value: be(8, 3), wantKey: windowKey, wantValue: be(8, 3), wantTs: 1_700_000_040_000},
		{name: "plain window short", layout: layoutPlainWindow, key: []byte("ab"), value: be(8, 3), err: "too short"},
		{name: "session", layout: layoutSession, key: sessionKey, value: be(8, 1), wantKey: sessionKey, wantValue: be(8, 1), wantTs: 900},
		{name: "session short", layout: layoutSession, key: []byte("bob"), value: be(8, 1), err: "too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, value, gotTs, skip, err := tc.layout.toChangelog(tc.key, tc.value, 42)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if skip != tc.skip {
				t.Fatalf("skip = %v, want %v", skip, tc.skip)
			}
			if skip {
				return
			}
			if !bytes.Equal(key, tc.wantKey) || !bytes.Equal(value, tc.wantValue) || value == nil || gotTs != tc.wantTs {
				t.Errorf("got %x = %x at %d, want %x = %x at %d", key, value, gotTs, tc.wantKey, tc.wantValue, tc.wantTs)
			}
		})
	}
}

// FuzzStateEntry: no entry makes a layout panic, and a time-ordered entry
// becomes the key-first key with the same key, start and sequence number.
func FuzzStateEntry(f *testing.F) {
	f.Add(byte(2), cat([]byte{0}, be(8, 60_000), []byte("k"), be(4, 0)), cat(be(8, 1), be(8, 3)))
	f.Add(byte(2), cat([]byte{1}, []byte("k"), be(8, 60_000), be(4, 0)), []byte{})
	f.Add(byte(1), []byte("k"), be(8, 1))
	f.Add(byte(4), state.EncodeSessionKey([]byte("k"), 1, 2), be(8, 1))
	f.Fuzz(func(t *testing.T, l byte, k, v []byte) {
		lay := entryLayout(int(l) % 5)
		key, _, _, skip, err := lay.toChangelog(k, v, 0)
		if err != nil || skip || lay != layoutTimeOrderedWindow {
			return
		}
		inner, start, seq, err := state.DecodeWindowKey(key)
		if err != nil {
			t.Fatalf("time-ordered %x became %x, which does not decode: %v", k, key, err)
		}
		if !bytes.Equal(cat([]byte{0}, be(8, start), inner, be(4, int64(seq))), k) {
			t.Fatalf("time-ordered %x became %x (key %q, start %d, seq %d)", k, key, inner, start, seq)
		}
	})
}

func TestReadCheckpoint(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       map[changelogPartition]int64
		err        string
	}{
		{name: "good", text: "0\n2\napp-counts-changelog 0 17\napp-other-changelog 1 4\n",
			want: map[changelogPartition]int64{{"app-counts-changelog", 0}: 17, {"app-other-changelog", 1}: 4}},
		{name: "empty", text: "0\n0\n", want: map[changelogPartition]int64{}},
		{name: "version", text: "1\n0\n", err: ":1: checkpoint version"},
		{name: "count", text: "0\nx\n", err: ":2: entry count"},
		{name: "fields", text: "0\n1\napp-counts-changelog 0\n", err: ":3: want"},
		{name: "number", text: "0\n1\napp-counts-changelog 0 x\n", err: ":3: partition or offset"},
		{name: "short", text: "0\n2\napp-counts-changelog 0 1\n", err: "1 entries, the header says 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".checkpoint")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readCheckpoint(path)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrStateDir) {
					t.Fatalf("err = %v, want an ErrStateDir containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%v = %d, want %d", k, got[k], v)
				}
			}
		})
	}
	if got, err := readCheckpoint(filepath.Join(t.TempDir(), ".checkpoint")); err != nil || got != nil {
		t.Errorf("a missing .checkpoint: %v, %v; want nothing", got, err)
	}
}

func FuzzReadCheckpoint(f *testing.F) {
	f.Add([]byte("0\n1\napp-counts-changelog 0 17\n"))
	f.Add([]byte("0\n-1\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, ".checkpoint")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readCheckpoint(path); err != nil && !errors.Is(err, ErrStateDir) {
			t.Fatalf("error %v is not an ErrStateDir", err)
		}
	})
}

// mkdirs makes the folders under root.
func mkdirs(t *testing.T, root string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenStateDir(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, "app/0_0/rocksdb/counts", "app/0_1/rocksdb/counts",
		"app/1_0/clicks-store/clicks-store.1714557660000", "app/1_0/clicks-store/clicks-store.1714557720000",
		"app/1_1/clicks-store/clicks-store.1714557720000", "app/not-a-task/rocksdb/x")
	if err := os.WriteFile(filepath.Join(dir, "app/0_1/.checkpoint"), []byte("0\n1\napp-counts-changelog 1 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{dir, filepath.Join(dir, "app")} {
		d, err := openStateDir(from, "app", nil)
		if err != nil {
			t.Fatal(err)
		}
		counts, clicks := d.stores["counts"], d.stores["clicks-store"]
		if len(d.stores) != 2 || counts == nil || clicks == nil {
			t.Fatalf("stores %v", d.stores)
		}
		if counts.segmented || !clicks.segmented || len(counts.tasks) != 2 || len(clicks.tasks) != 2 {
			t.Errorf("counts %+v, clicks %+v", counts, clicks)
		}
		if counts.checkpoints[1] != 9 || len(counts.checkpoints) != 1 {
			t.Errorf("counts' checkpoints %v, want partition 1 at 9", counts.checkpoints)
		}
		segs, err := segments(clicks.tasks[0], "clicks-store", segmentInterval(70_000))
		if err != nil || len(segs) != 2 || !strings.HasSuffix(segs[0], ".1714557660000") {
			t.Errorf("segments %v, %v", segs, err)
		}
		// A five-minute window's segments are two and a half minutes
		// long: these names do not fit.
		if _, err := segments(clicks.tasks[0], "clicks-store", segmentInterval(300_000)); err == nil || !strings.Contains(err.Error(), "window size or grace mismatch") {
			t.Errorf("segments of another retention: %v, want a mismatch", err)
		}
	}
	if _, err := openStateDir(filepath.Join(dir, "app", "0_0"), "other", nil); err == nil || !strings.Contains(err.Error(), "no task folders") {
		t.Errorf("a folder with no tasks: %v", err)
	}
	mkdirs(t, dir, "app/2_0/rocksdb/counts")
	if _, err := openStateDir(dir, "app", nil); err == nil || !strings.Contains(err.Error(), "in two tasks") {
		t.Errorf("a store in two tasks of one partition: %v", err)
	}
}

// TestStateDirLocked: a process holding the application folder's lock, as
// a running Kafka Streams does, is refused, and named.
func TestStateDirLocked(t *testing.T) {
	if path := os.Getenv("MIGRATE_HOLD_LOCK"); path != "" {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			os.Exit(2)
		}
		lk := syscall.Flock_t{Type: syscall.F_WRLCK}
		if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLKW, &lk); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	dir := t.TempDir()
	mkdirs(t, dir, "app/0_0/rocksdb/counts")
	lock := filepath.Join(dir, "app", ".lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openStateDir(dir, "app", nil); err != nil {
		t.Fatalf("unlocked: %v", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStateDirLocked$")
	cmd.Env = append(os.Environ(), "MIGRATE_HOLD_LOCK="+lock)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "locked\n" {
		t.Fatalf("the lock holder said %q, %v", line, err)
	}
	_, err = openStateDir(dir, "app", nil)
	if !errors.Is(err, ErrStateDir) || !strings.Contains(err.Error(), "still running") {
		t.Fatalf("locked: %v, want a refusal", err)
	}
	t.Log(err)
}
