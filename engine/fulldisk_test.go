//go:build linux

package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/state/rocks"
	"github.com/stoatflow/stoatctl/internal/smalldisk"
)

// TestLocalStateFullDisk keeps the RocksDB state on a small tmpfs: a start
// while the disk is full fails with an error naming the lane's state
// directory, and once there is room again the counts go on exactly where
// they were, nothing committed lost. Mounting needs root (CI runs as
// root); without it the test is skipped, except under CI.
func TestLocalStateFullDisk(t *testing.T) {
	needRocks(t)
	const keys, per = 200, 5
	disk := smalldisk.Mount(t, 320<<20)
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	dir := filepath.Join(disk, "state")
	// One lane: each lane database preallocates its log (70 MiB), and
	// RocksDB wants 128 MiB free besides.
	conf := storeCfg(addr, "fulldisk", "rocksDB", dir, "num.stream.threads", "1")

	_, stop := runEngine(t, counts(), conf)
	produce(t, addr, "in", keyed(keys, per))
	readCommitted(t, addr, "out", keys*per, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// Fill the disk, leaving less than RocksDB needs to flush.
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-(16<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	e := engine.New(counts(), conf, engine.WithLogger(testLogger(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = e.Run(ctx)
	if err == nil || !errors.Is(err, rocks.ErrDiskFull) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("a start on a full disk returned %v, want an error naming %s", err, dir)
	}
	t.Logf("start on a full disk: %v", err)

	// Room again: the counts go on from what was committed.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_, stop = runEngine(t, counts(), conf)
	produce(t, addr, "in", keyed(keys, per))
	got := readCommitted(t, addr, "out", 2*keys*per, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, keys, 2*per)
}

// TestLocalCommitFailureStops fills the disk under a running engine's
// RocksDB state: the next epoch commits in Kafka but cannot be written
// locally, and the engine stops with ErrLocalCommit rather than hold ever
// more layers in memory; once there is room again the counts go on,
// exact, the local state brought up to date from the changelogs.
func TestLocalCommitFailureStops(t *testing.T) {
	needRocks(t)
	const keys, per = 200, 5
	disk := smalldisk.Mount(t, 320<<20)
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	dir := filepath.Join(disk, "state")
	conf := storeCfg(addr, "localcommit", "rocksDB", dir, "num.stream.threads", "1")

	e := engine.New(counts(), conf, engine.WithLogger(testLogger(t)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	produce(t, addr, "in", keyed(keys, per))
	readCommitted(t, addr, "out", keys*per, 30*time.Second)

	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-(16<<20)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	produce(t, addr, "in", keyed(keys, per))
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrLocalCommit) || !errors.Is(err, rocks.ErrDiskFull) || !strings.Contains(err.Error(), dir) {
			t.Fatalf("run on a disk that filled up returned %v, want ErrLocalCommit for a full disk naming %s", err, dir)
		}
		t.Logf("stopped: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatalf("the engine still runs a minute after its disk filled up (state %v)", e.State())
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	_, stop := runEngine(t, counts(), conf)
	produce(t, addr, "in", keyed(keys, per))
	got := readCommitted(t, addr, "out", 3*keys*per, 30*time.Second)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, got, keys, 3*per)
}
