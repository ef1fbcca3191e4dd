package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stoatflow/stoatctl/engine"
)

// TestUnknownKeysWarn: a Go program's configuration with a misspelt key
// gets a warning naming the key it meant, as stoatctl run's does, unless
// the caller says it reported the keys itself.
func TestUnknownKeysWarn(t *testing.T) {
	addr := startKafka(t, map[string]int32{"in": 1, "out": 1})
	for _, tc := range []struct {
		name string
		opts []engine.Option
		want bool
	}{
		{"warned", nil, true},
		{"checked by the caller", []engine.Option{engine.WithConfigChecked()}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log lockedBuffer
			c := cfg(addr, "unknown-keys", "num.stream.thread", "4")
			opts := append([]engine.Option{engine.WithLogger(slog.New(slog.NewTextHandler(&log, nil)))}, tc.opts...)
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the warning comes first; nothing else needs to run
			_ = engine.New(uppercase(), c, opts...).Run(ctx)
			warned := strings.Contains(log.String(), "level=WARN") &&
				strings.Contains(log.String(), "unknown configuration key num.stream.thread; did you mean num.stream.threads?")
			if warned != tc.want {
				t.Fatalf("warned %v, want %v; log:\n%s", warned, tc.want, log.String())
			}
		})
	}
}
