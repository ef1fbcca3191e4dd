package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/kafka"
)

// Default as Spec.Partitions or Spec.ReplicationFactor asks for the
// broker's default.
const Default = -1

// maxPartitions bounds a Spec's partition count; more is surely a typo.
const maxPartitions = 100_000

// Spec is a topic to create.
type Spec struct {
	Name string
	// Partitions is the partition count, or Default.
	Partitions int32
	// ReplicationFactor is the number of replicas of each partition, or
	// Default.
	ReplicationFactor int16
	// Configs are topic-level configs, such as retention.ms.
	Configs map[string]string
}

// Check refuses a spec no broker would accept, naming the topic and the
// field at fault.
func (s Spec) Check() error {
	if err := kafka.CheckTopicName(s.Name); err != nil {
		return err
	}
	if s.Partitions != Default && (s.Partitions < 1 || s.Partitions > maxPartitions) {
		return fmt.Errorf("topic %s: partition count %d: want 1 to %d, or -1 for the broker's default", s.Name, s.Partitions, maxPartitions)
	}
	if s.ReplicationFactor != Default && s.ReplicationFactor < 1 {
		return fmt.Errorf("topic %s: replication factor %d: want at least 1, or -1 for the broker's default", s.Name, s.ReplicationFactor)
	}
	for k := range s.Configs {
		if k == "" {
			return fmt.Errorf("topic %s: a config with an empty name", s.Name)
		}
	}
	return nil
}

// ParseConfig reads topic configs given as KEY=VALUE, refusing a value
// without '=' and a key given twice with different values.
func ParseConfig(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config %q: want KEY=VALUE", p)
		}
		if prev, dup := out[k]; dup && prev != v {
			return nil, fmt.Errorf("config %s given twice, as %q and %q", k, prev, v)
		}
		out[k] = v
	}
	return out, nil
}

// Topic is a topic as the cluster describes it.
type Topic struct {
	Name              string            `json:"name"`
	ReplicationFactor int               `json:"replicationFactor"`
	Partitions        []Partition       `json:"partitions"`
	Configs           map[string]string `json:"configs,omitempty"`
	// Internal is set on the broker's own topics (__consumer_offsets,
	// __transaction_state).
	Internal bool `json:"internal,omitempty"`
}

// Partition is one partition of a Topic.
type Partition struct {
	ID       int32   `json:"partition"`
	Leader   int32   `json:"leader"`
	Replicas []int32 `json:"replicas"`
}

// Admin is a connection to a cluster.
type Admin struct {
	seeds []string
	opts  []kgo.Opt
	cl    *kgo.Client
	adm   *kadm.Client
}

// Connect makes an Admin for the cluster at seeds (host:port each). It
// does not dial yet: the first request does.
func Connect(seeds []string, opts ...kgo.Opt) (*Admin, error) {
	if len(seeds) == 0 {
		return nil, errors.New("connect: no bootstrap server")
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", seeds[0], err)
	}
	return &Admin{seeds: seeds, opts: opts, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Close closes the connection.
func (a *Admin) Close() { a.cl.Close() }

// Addr is the first bootstrap server, which errors name.
func (a *Admin) Addr() string { return a.seeds[0] }

// Create creates the topic s describes and returns it as the broker
// reports it, with the broker's defaults filled in. With validateOnly the
// broker checks the request but creates nothing (CreateTopics'
// validate_only). A topic that exists is an error that errors.Is
// kerr.TopicAlreadyExists.
func (a *Admin) Create(ctx context.Context, s Spec, validateOnly bool) (Topic, error) {
	if err := kafka.CheckTopicName(s.Name); err != nil {
		return Topic{}, fmt.Errorf("create: %w", err)
	}
	if err := s.Check(); err != nil {
		return Topic{}, fmt.Errorf("create %w", err)
	}
	var configs map[string]*string
	if len(s.Configs) > 0 {
		configs = make(map[string]*string, len(s.Configs))
		for k, v := range s.Configs {
			configs[k] = &v
		}
	}
	create := a.adm.CreateTopics
	if validateOnly {
		create = a.adm.ValidateCreateTopics
	}
	rs, err := create(ctx, s.Partitions, s.ReplicationFactor, configs, s.Name)
	if err != nil {
		return Topic{}, fmt.Errorf("create topic %s on %s: %w", s.Name, a.Addr(), a.explain(ctx, err))
	}
	r, ok := rs[s.Name]
	switch {
	case !ok:
		return Topic{}, fmt.Errorf("create topic %s on %s: the broker's answer does not mention the topic", s.Name, a.Addr())
	case r.Err != nil && r.ErrMessage != "" && !strings.Contains(r.Err.Error(), r.ErrMessage):
		return Topic{}, fmt.Errorf("create topic %s on %s: %w: %s", s.Name, a.Addr(), r.Err, r.ErrMessage)
	case r.Err != nil:
		return Topic{}, fmt.Errorf("create topic %s on %s: %w", s.Name, a.Addr(), r.Err)
	}
	t := Topic{Name: s.Name, ReplicationFactor: int(r.ReplicationFactor), Configs: s.Configs}
	for p := range r.NumPartitions {
		t.Partitions = append(t.Partitions, Partition{ID: p, Leader: -1})
	}
	if validateOnly {
		return t, nil
	}
	// The partitions' leaders and replicas are in the metadata, not the
	// create response.
	if listed, err := a.List(ctx, true, s.Name); err == nil && len(listed) == 1 {
		listed[0].Configs = s.Configs
		return listed[0], nil
	}
	return t, nil
}

// List returns the cluster's topics sorted by name, each with its
// partitions in order: every topic, or only those named. A named topic
// that does not exist is an error that errors.Is
// kerr.UnknownTopicOrPartition. Internal topics are left out unless
// internal is set or they are named.
func (a *Admin) List(ctx context.Context, internal bool, names ...string) ([]Topic, error) {
	var (
		details kadm.TopicDetails
		err     error
	)
	if internal || len(names) > 0 {
		details, err = a.adm.ListTopicsWithInternal(ctx, names...)
	} else {
		details, err = a.adm.ListTopics(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("list topics on %s: %w", a.Addr(), a.explain(ctx, err))
	}
	var out []Topic
	for _, d := range details.Sorted() {
		if d.Err != nil {
			return nil, fmt.Errorf("list topics on %s: topic %s: %w", a.Addr(), d.Topic, d.Err)
		}
		t := Topic{Name: d.Topic, Internal: d.IsInternal}
		for _, p := range d.Partitions.Sorted() {
			t.Partitions = append(t.Partitions, Partition{ID: p.Partition, Leader: p.Leader, Replicas: slices.Clone(p.Replicas)})
		}
		if len(t.Partitions) > 0 {
			t.ReplicationFactor = len(t.Partitions[0].Replicas)
		}
		out = append(out, t)
	}
	return out, nil
}

// explain turns a deadline into what it means here: the cluster did not
// answer in time, most often because nothing listens at the address.
func (a *Admin) explain(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer in time (is a broker listening at %s?): %w", a.Addr(), err)
	}
	return err
}
