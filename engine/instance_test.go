package engine

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stoatflow/stoatctl/engine/config"
)

func TestKeptInstanceID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	id, made, err := keptInstanceID(dir)
	if err != nil || !made || !instanceIDPattern.MatchString(id) {
		t.Fatalf("first start: id %q, made %v, err %v; want a new id", id, made, err)
	}
	again, made, err := keptInstanceID(dir)
	if err != nil || made || again != id {
		t.Fatalf("restart: id %q, made %v, err %v; want %q kept", again, made, err, id)
	}
	other, _, err := keptInstanceID(filepath.Join(t.TempDir(), "app"))
	if err != nil || other == id {
		t.Fatalf("another state directory: id %q (%v); want one of its own, not %q", other, err, id)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, instanceFile+".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Processes starting at once on one state directory agree on one id.
func TestKeptInstanceIDRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	ids := make([]string, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, _, err := keptInstanceID(dir)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("ids %v: want one", ids)
		}
	}
}

func TestKeptInstanceIDCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, instanceFile)
	if err := os.WriteFile(path, []byte("not an id\x00\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := keptInstanceID(dir)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("corrupt file: %v; want an error naming %s", err, path)
	}
}

// A state directory that cannot be made (a file stands where it should
// be: this holds for root too) is an error naming it.
func TestKeptInstanceIDUnwritable(t *testing.T) {
	root := t.TempDir()
	blocker := filepath.Join(root, "state")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "app")
	_, _, err := keptInstanceID(dir)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("state directory under a file: %v; want an error naming %s", err, dir)
	}
}

// TestDefaultStateSlots: instances of one application on the default
// state.dir each hold a slot of their own while they run; a slot is free
// again once its instance stops, and the next start takes the lowest.
func TestDefaultStateSlots(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	claim := func() (*Engine, string) {
		t.Helper()
		e := &Engine{log: slog.New(slog.DiscardHandler), cfg: config.New(map[string]string{})}
		root, err := e.claimDefaultStateDir("app")
		if err != nil {
			t.Fatal(err)
		}
		if got := e.cfg.String(config.StateDir); got != root {
			t.Fatalf("state.dir %q after claiming %q", got, root)
		}
		return e, root
	}
	first, r1 := claim()
	_, r2 := claim()
	if r1 != StateSlotDir(1) || r2 != StateSlotDir(2) {
		t.Fatalf("two running instances got %s and %s, want %s and %s", r1, r2, StateSlotDir(1), StateSlotDir(2))
	}
	first.releaseState()
	if _, r3 := claim(); r3 != StateSlotDir(1) {
		t.Fatalf("after the first stopped, a new instance got %s, want %s again", r3, StateSlotDir(1))
	}
}
