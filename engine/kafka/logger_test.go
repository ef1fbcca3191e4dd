package kafka_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// TestLogger: franz-go's info lines are the engine's debug lines, its
// warnings and errors keep their level, and the client asks for no more
// than the engine's logger keeps.
func TestLogger(t *testing.T) {
	for _, tc := range []struct {
		engine    slog.Level
		wantLevel kgo.LogLevel
		logged    kgo.LogLevel
		want      string // the level of the line written, "" for none
	}{
		{slog.LevelDebug, kgo.LogLevelInfo, kgo.LogLevelInfo, "DEBUG"},
		{slog.LevelDebug, kgo.LogLevelInfo, kgo.LogLevelWarn, "WARN"},
		{slog.LevelInfo, kgo.LogLevelWarn, kgo.LogLevelInfo, ""},
		{slog.LevelInfo, kgo.LogLevelWarn, kgo.LogLevelError, "ERROR"},
		{slog.LevelError, kgo.LogLevelError, kgo.LogLevelWarn, ""},
	} {
		var buf bytes.Buffer
		l := kafka.Logger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.engine})))
		if got := l.Level(); got != tc.wantLevel {
			t.Errorf("engine at %v: client level %v, want %v", tc.engine, got, tc.wantLevel)
		}
		l.Log(tc.logged, "synced", "group", "g1")
		out := buf.String()
		switch {
		case tc.want == "" && out != "":
			t.Errorf("engine at %v, client %v line: wrote %q, want nothing", tc.engine, tc.logged, out)
		case tc.want != "" && (!strings.Contains(out, "level="+tc.want) || !strings.Contains(out, `msg="kafka client: synced" group=g1`)):
			t.Errorf("engine at %v, client %v line: wrote %q, want a %s line with the message and its fields", tc.engine, tc.logged, out, tc.want)
		}
	}
}
