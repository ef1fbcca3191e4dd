package main

import (
	"bytes"
	"context"
	"errors"
	"runtime/trace"
	"strings"
	"testing"
	"time"
)

// blockedOn says it is about to park, then parks until ch is closed: the
// goroutine the test expects to see waiting, at this function.
func blockedOn(ready, ch chan struct{}, done chan<- struct{}) {
	close(ready)
	<-ch
	close(done)
}

// TestSummarize traces a region in which one goroutine waits on a
// channel while another spins for 30 ms, and checks the summary: the
// region's window, the waiting goroutine's time at its site and its one
// wait, the spinning one's running time.
func TestSummarize(t *testing.T) {
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Skipf("tracing is on already: %v", err)
	}
	ready, ch, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	spun := make(chan struct{})
	trace.WithRegion(context.Background(), "test region", func() {
		go blockedOn(ready, ch, done)
		<-ready
		go func() {
			defer close(spun)
			for end := time.Now().Add(30 * time.Millisecond); time.Now().Before(end); {
			}
		}()
		// The waiter is released once the spinner is done: it waited
		// at least as long as the spinner ran.
		<-spun
		close(ch)
		<-done
	})
	trace.Stop()

	s, err := summarize(bytes.NewReader(buf.Bytes()), "test region", 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Window < 30*time.Millisecond {
		t.Errorf("window %v, want at least the 30 ms the spinner ran", s.Window)
	}
	var waited time.Duration
	var waits int
	var spinning time.Duration
	for k, d := range s.States {
		if strings.HasSuffix(k.Kind, ".blockedOn") && strings.HasPrefix(k.State, "waiting at ") && strings.Contains(k.State, ".blockedOn") {
			waited += d
		}
		if strings.Contains(k.Kind, ".TestSummarize.func") && k.State == "running" {
			spinning += d
		}
	}
	for k, n := range s.Waits {
		if strings.HasSuffix(k.Kind, ".blockedOn") && strings.Contains(k.State, ".blockedOn") {
			waits += n
		}
	}
	if waited < 20*time.Millisecond {
		t.Errorf("blockedOn waited %v at its channel, want about the spinner's 30 ms; states: %v", waited, s.States)
	}
	if waits != 1 {
		t.Errorf("blockedOn began to wait %d times at its channel, want 1; waits: %v", waits, s.Waits)
	}
	if spinning < 20*time.Millisecond {
		t.Errorf("the spinning goroutine ran %v, want about 30 ms; states: %v", spinning, s.States)
	}
	if s.Procs < 1 {
		t.Errorf("%d Ps", s.Procs)
	}
	var out bytes.Buffer
	s.write(&out, 5)
	if !strings.Contains(out.String(), `region "test region"`) {
		t.Errorf("report does not name the region:\n%s", out.String())
	}

	if _, err := summarize(bytes.NewReader(buf.Bytes()), "test region", 2); !errors.Is(err, ErrNoRegion) {
		t.Errorf("second occurrence of a region that ran once: %v, want ErrNoRegion", err)
	}
	if _, err := summarize(strings.NewReader("not a trace"), "test region", 1); err == nil {
		t.Error("a file that is not a trace: no error")
	}
}
