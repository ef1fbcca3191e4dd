package syncbuf_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stoatflow/stoatctl/internal/syncbuf"
)

// Writers and a reader at once, under -race: every line arrives whole.
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", w, i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
}

// WaitFor returns once a write brings the text, and gives up with the
// context.
func TestWaitFor(t *testing.T) {
	var b syncbuf.Buffer
	go func() {
		for i := range 50 {
			fmt.Fprintf(&b, "line %d\n", i)
		}
	}()
	if err := b.WaitFor(t.Context(), "line 49\n"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.WaitFor(ctx, "never"); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitFor on a cancelled context = %v", err)
	}
}
