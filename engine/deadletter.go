package engine

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/task"
)

// Dead-lettering under the production handler. A sink record too large
// for its topic is refused before it is produced (checkSize). Under
// default.production.exception.handler=dead-letter, the input record that
// produced it goes to errors.dead.letter.queue.topic.name instead, in the
// same transaction as the epoch's other output, with headers saying what
// happened, as Kafka Streams' dead-letter queue records do (KIP-1034).
//
// The output carries only its input's coordinates (task.Origin), not its
// bytes: carrying them on every output would cost every record for the
// sake of a rare one. So the input is read back from its topic, at its
// offset, read-committed (it was consumed so). A replay of the epoch reads
// the same record and writes the same dead letter, so the dead letter is
// committed exactly once, with the epoch.

// handlerDeadLetter is the production handler's dead-letter verdict.
const handlerDeadLetter = "dead-letter"

// deadLetterReadTimeout bounds the read of the input record back.
const deadLetterReadTimeout = 30 * time.Second

// deadLetter is the dead-letter record for the input behind an oversized
// output: the input record's key, value and headers, plus the error
// headers. An input the broker no longer holds (compacted or deleted
// since) gives a record of the headers alone; so does an input too large
// to go to the dead-letter topic itself (the caller checks the size).
func (r *runner) deadLetter(ctx context.Context, tooLarge *RecordTooLargeError) (task.Output, error) {
	o := task.Output{Topic: r.s.deadLetterTopic, Partition: -1, Timestamp: time.Now().UnixMilli()}
	origin := tooLarge.Origin
	if origin.Topic != "" {
		in, found, err := r.readBack(ctx, origin)
		if err != nil {
			return o, fmt.Errorf("dead letter for %s: read the input record back: %w", origin, err)
		}
		if found {
			o.Key, o.Value, o.Timestamp = in.Key, in.Value, in.Timestamp.UnixMilli()
			for _, h := range in.Headers {
				o.Headers = o.Headers.Add(h.Key, h.Value)
			}
		}
	}
	o.Headers = o.Headers.
		Add("__streams.errors.exception", []byte("RecordTooLargeException")).
		Add("__streams.errors.message", []byte(tooLarge.Error()))
	if origin.Topic != "" {
		o.Headers = o.Headers.
			Add("__streams.errors.topic", []byte(origin.Topic)).
			Add("__streams.errors.partition", []byte(strconv.Itoa(int(origin.Partition)))).
			Add("__streams.errors.offset", []byte(strconv.FormatInt(origin.Offset, 10)))
	}
	return o, nil
}

// readBack reads the record at origin's offset, read-committed; found is
// false when the partition no longer holds it.
func (r *runner) readBack(ctx context.Context, origin task.Origin) (*kgo.Record, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, deadLetterReadTimeout)
	defer cancel()
	opts := append([]kgo.Opt{kgo.SeedBrokers(r.s.seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{origin.Topic: {origin.Partition: kgo.NewOffset().At(origin.Offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, r.s.mainOpts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, false, err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		var fetchErr error
		fs.EachError(func(_ string, _ int32, err error) { fetchErr = err })
		if fetchErr != nil {
			return nil, false, fetchErr
		}
		var rec *kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			if rec == nil {
				rec = r
			}
		})
		if rec != nil {
			// Compaction may have removed the record: the first one
			// read is then past it.
			return rec, rec.Offset == origin.Offset, nil
		}
	}
}
