package kafka

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Logger adapts an slog.Logger to franz-go's logger, so the Kafka client's
// own account of group membership and transactions lands in the engine's
// log. franz-go logs every transaction begun and ended at its info level,
// far too often for an operator's info log, so its info lines become
// debug lines; its warnings and errors keep their level. With the engine's
// logger at debug, a rebalance and the transactions around it can be read
// off the log line by line.
func Logger(log *slog.Logger) kgo.Logger { return clientLogger{log} }

type clientLogger struct{ log *slog.Logger }

func (l clientLogger) Level() kgo.LogLevel {
	switch ctx := context.Background(); {
	case l.log.Enabled(ctx, slog.LevelDebug):
		return kgo.LogLevelInfo
	case l.log.Enabled(ctx, slog.LevelWarn):
		return kgo.LogLevelWarn
	default:
		return kgo.LogLevelError
	}
}

func (l clientLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	lv := slog.LevelDebug
	switch level {
	case kgo.LogLevelError:
		lv = slog.LevelError
	case kgo.LogLevelWarn:
		lv = slog.LevelWarn
	}
	l.log.Log(context.Background(), lv, "kafka client: "+msg, keyvals...)
}
