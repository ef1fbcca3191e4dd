package engine

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
	"github.com/stoatflow/stoatctl/engine/topology"
)

// Repartition topics (stoatflow.topology.rekey=topic): a re-key boundary's
// sink writes <application.id>-<name>-repartition inside the epoch's
// transaction, and its source reads it read-committed like any source
// topic, so the consumer group spreads the downstream tasks over the
// instances. The engine creates the topics and deletes what every reader
// committed past, as Kafka Streams does.

// repartitionConfigs are Kafka Streams' settings of a repartition topic:
// records are deleted by the purge, not by time.
var repartitionConfigs = map[string]string{
	kafka.CleanupPolicy:        kafka.PolicyDelete,
	kafka.RetentionMs:          "-1",
	"segment.bytes":            "52428800",
	kafka.MessageTimestampType: "CreateTime",
}

// ensureRepartitionTopics creates (or checks) the repartition topics and
// records their partition counts in r.partitions: the count declared on
// the repartition; else, when a join reads it beside topics of the
// input (co-partitioned), their count, as Kafka Streams' co-partitioning
// enforcer sets it (a foreign-key join's subscription topic takes the
// right table's); else the largest of the topology's other source topics
// (Kafka Streams takes the largest of the upstream sub-topology's
// sources; a re-key of a re-key takes the same here).
func (r *runner) ensureRepartitionTopics(ctx context.Context) error {
	if len(r.built.Repartitions) == 0 {
		return nil
	}
	var most int32 = 1
	for _, n := range r.partitions {
		most = max(most, n)
	}
	beside := copartitionedCounts(r.built, r.partitions)
	specs := make([]kafka.TopicSpec, 0, len(r.built.Repartitions))
	for _, rp := range r.built.Repartitions {
		n := rp.Partitions
		if n <= 0 {
			n = beside[rp.SourceNode]
		}
		if n <= 0 {
			n = most
		}
		specs = append(specs, kafka.TopicSpec{Name: rp.Topic, Partitions: n, ReplicationFactor: -1, Configs: maps.Clone(repartitionConfigs)})
	}
	specs, err := kafka.ApplyTopicSettings(r.e.cfg, specs)
	if err != nil {
		return err
	}
	if err := kafka.EnsureTopics(ctx, r.adm, specs, r.s.createTopic); err != nil {
		return fmt.Errorf("engine: repartition topics: %w", conn.Explain(err, "create", "the repartition topics"))
	}
	for _, sp := range specs {
		r.partitions[sp.Name] = sp.Partitions
	}
	return nil
}

// copartitionedCounts maps the source node of each repartition topic that
// a co-partition group puts beside topics of the input to their partition
// count (the largest, if they differ: checkCopartitioned then refuses
// them). partitions holds the input topics' counts.
func copartitionedCounts(built *topology.Built, partitions map[string]int32) map[string]int32 {
	out := map[string]int32{}
	for _, c := range built.Copartitions {
		var n int32
		var inner []string
		for _, src := range c.Sources {
			nd := built.Nodes[src]
			if nd == nil || nd.Source == nil {
				continue
			}
			for _, t := range nd.Source.Topics {
				if p, ok := partitions[t]; ok {
					n = max(n, p)
				} else {
					inner = append(inner, src)
				}
			}
		}
		for _, src := range inner {
			if n > 0 && out[src] < n {
				out[src] = n
			}
		}
	}
	return out
}

// purger deletes the records of repartition topics below the offsets this
// instance committed, at most once per interval, on a goroutine of its
// own: a slow or failing DeleteRecords delays nothing but the next purge.
// Records below a committed offset were read by the only group that reads
// the topic, so nothing needs them (a task that moves resumes from the
// committed offset).
type purger struct {
	adm      *kadm.Client
	topics   map[string]bool
	interval time.Duration
	log      func(msg string, args ...any)

	mu      sync.Mutex
	last    time.Time
	running bool
}

func newPurger(adm *kadm.Client, topics []string, c config.Config, log func(string, ...any)) (*purger, error) {
	ms, err := c.BoundedInt(config.RepartitionPurgeIntervalMs, 30_000)
	if err != nil {
		return nil, err
	}
	p := &purger{adm: adm, topics: map[string]bool{}, interval: time.Duration(ms) * time.Millisecond, log: log}
	for _, t := range topics {
		p.topics[t] = true
	}
	return p, nil
}

// committed is told the offsets of a committed epoch; once the interval
// passed since the last purge it deletes the repartition topics' records
// below them.
func (p *purger) committed(offsets map[string]map[int32]int64) {
	if p == nil || len(p.topics) == 0 {
		return
	}
	p.mu.Lock()
	if p.running || time.Since(p.last) < p.interval {
		p.mu.Unlock()
		return
	}
	p.running, p.last = true, time.Now()
	p.mu.Unlock()
	to := kadm.Offsets{}
	for t, ps := range offsets {
		if !p.topics[t] {
			continue
		}
		for part, o := range ps {
			to.AddOffset(t, part, o, -1)
		}
	}
	go func() {
		defer func() {
			p.mu.Lock()
			p.running = false
			p.mu.Unlock()
		}()
		if len(to) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.interval)
		defer cancel()
		res, err := p.adm.DeleteRecords(ctx, to)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			p.log("purge of repartition topics failed; the next commit tries again", "err", err)
		}
	}()
}
