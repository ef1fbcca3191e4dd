package cmd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/engine/broker"
)

// TestRunTwoInstancesSideBySide starts two instances of one application
// on one host with the default flags but the brokers' address: the
// second neither fails on the REST API's default address nor shares the
// first's state directory and instance id (which made it wait for the
// first to leave the group). It serves on a free port and keeps its state
// in the next default slot; both are assigned partitions, as two instances
// on two hosts would be.
func TestRunTwoInstancesSideBySide(t *testing.T) {
	// The default state.dir is below the temporary directory: this test's.
	t.Setenv("TMPDIR", t.TempDir())
	b, err := broker.Start(t.Context(), broker.Options{Port: broker.RandomPort, SeedTopics: map[string]int32{"amounts": 4, "totals-out": 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := func() (*syncBuffer, chan int) {
		stderr := &syncBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- RunContext(ctx, []string{"run", "-t", "running-total", "-b", b.Addr()}, &syncBuffer{}, stderr)
		}()
		return stderr, done
	}
	wait := func(name string, stderr *syncBuffer, what string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
		defer wcancel()
		if err := stderr.WaitFor(wctx, what); err != nil {
			t.Fatalf("%s: %v; stderr:\n%s", name, err, stderr)
		}
	}
	errA, doneA := start()
	wait("first", errA, `msg="partitions assigned"`)
	errB, doneB := start()
	wait("second", errB, `msg="partitions assigned"`)

	instance := regexp.MustCompile(`msg="engine starting" application.id=\S+ instance=(\S+) instance_from=("[^"]*"|\S+)`)
	a, b2 := instance.FindStringSubmatch(errA.String()), instance.FindStringSubmatch(errB.String())
	if a == nil || b2 == nil || a[1] == b2[1] {
		t.Fatalf("instance ids %q and %q: want two", a, b2)
	}
	slot2 := filepath.Join(engine.StateSlotDir(2), "running-total")
	if !strings.Contains(b2[2], slot2) || !strings.HasPrefix(slot2, os.TempDir()) {
		t.Errorf("the second keeps its id at %s, want in %s", b2[2], slot2)
	}
	if !strings.Contains(errB.String(), "this instance keeps its state and id in a directory of its own") {
		t.Errorf("the second does not say it took a state directory of its own:\n%s", errB)
	}
	if strings.Contains(errB.String(), "waiting for it to leave") {
		t.Errorf("the second waited for the first:\n%s", errB)
	}
	listening := regexp.MustCompile(`msg="REST API listening" url=(\S+)`)
	ua, ub := listening.FindStringSubmatch(errA.String()), listening.FindStringSubmatch(errB.String())
	if ua == nil || ub == nil || ua[1] == ub[1] {
		t.Errorf("REST APIs at %q and %q: want two", ua, ub)
	}
	cancel()
	for name, done := range map[string]chan int{"first": doneA, "second": doneB} {
		if code := <-done; code != ExitOK {
			t.Errorf("the %s exited %d", name, code)
		}
	}
}
