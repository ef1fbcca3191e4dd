package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/stoatflow/stoatctl/engine/state"
	"github.com/stoatflow/stoatctl/engine/topology"

	"github.com/stoatflow/stoatctl/internal/backoff"
)

// Topic config keys this package sets or checks.
const (
	CleanupPolicy        = "cleanup.policy"
	RetentionMs          = "retention.ms"
	MessageTimestampType = "message.timestamp.type"
)

// Cleanup policies of changelog topics, and of repartition topics
// (PolicyDelete).
const (
	PolicyCompact       = "compact"
	PolicyCompactDelete = "compact,delete"
	PolicyDelete        = "delete"
)

// TopicSpec is what an internal topic must look like.
type TopicSpec struct {
	Name string
	// Store is the state store whose changelog the topic is.
	Store string
	// Partitions is the partition count the topic is created with and
	// must have.
	Partitions int32
	// ReplicationFactor is -1, the broker's default, as Kafka Streams'
	// replication.factor defaults to.
	ReplicationFactor int16
	// Configs are the topic configs it is created with. Of those, an
	// existing topic must have the same cleanup.policy and, when the
	// policy deletes, at least the retention.ms.
	Configs map[string]string
}

// InternalTopics returns the internal topics b needs, sorted by name: the
// changelog of every logged store except global ones, whose source topic is
// their changelog. Each has partitions partitions, the partition count of
// the topology's input: a store's changelog partition holds the state of
// the input partition of the same number.
//
// Configs are Kafka Streams' (its UnwindowedUnversionedChangelogTopicConfig
// and WindowedChangelogTopicConfig): message.timestamp.type CreateTime, so
// that restored records keep the timestamps the store wrote; cleanup.policy
// compact, or compact,delete for window and session stores; then the
// store's own LogConfig over those, which for window and session stores
// carries retention.ms, the store's retention plus a day.
func InternalTopics(b *topology.Built, partitions int32) []TopicSpec {
	var specs []TopicSpec
	for _, name := range slices.Sorted(maps.Keys(b.Stores)) {
		info := b.Stores[name]
		if info.ChangelogTopic == "" || info.Global {
			continue
		}
		policy := PolicyCompact
		switch info.Builder.Kind() {
		case state.KindWindow, state.KindTimestampedWindow, state.KindSession:
			policy = PolicyCompactDelete
		}
		cfg := map[string]string{
			MessageTimestampType: "CreateTime",
			CleanupPolicy:        policy,
		}
		maps.Copy(cfg, info.Builder.LogConfig())
		specs = append(specs, TopicSpec{
			Name:              info.ChangelogTopic,
			Store:             name,
			Partitions:        partitions,
			ReplicationFactor: -1,
			Configs:           cfg,
		})
	}
	return specs
}

// TopicsError is EnsureTopics' report of internal topics that are not as
// the topology needs them: every missing topic it was not allowed to
// create, and every difference of the existing ones.
type TopicsError struct {
	// Missing are the names of the topics that do not exist, sorted.
	Missing    []string
	Mismatches []TopicMismatch
}

// TopicMismatch is one way an existing topic differs from its spec.
type TopicMismatch struct {
	Topic string
	// Field is "partitions" or the config key that differs.
	Field     string
	Got, Want string
}

func (m TopicMismatch) String() string {
	switch {
	case m.Field == "partitions":
		return fmt.Sprintf("%s: has %s partitions, needs %s", m.Topic, m.Got, m.Want)
	case m.Field == RetentionMs:
		return fmt.Sprintf("%s: %s is %s, needs %s or more", m.Topic, m.Field, m.Got, m.Want)
	}
	return fmt.Sprintf("%s: %s is %q, needs %q", m.Topic, m.Field, m.Got, m.Want)
}

func (e *TopicsError) Error() string {
	var b strings.Builder
	b.WriteString("internal topics are not as the topology needs them:")
	for _, m := range e.Mismatches {
		b.WriteString("\n  " + m.String())
	}
	for _, t := range e.Missing {
		b.WriteString("\n  " + t + ": missing, and creating topics is not allowed")
	}
	return b.String()
}

// EnsureTopics makes the cluster's internal topics match specs. Missing
// topics are created when allowCreate is set; existing ones are checked for
// their partition count, cleanup.policy and (for a policy that deletes)
// retention.ms. Topics are never altered: a topic that differs is
// reported, as Kafka Streams does, because repartitioning a changelog
// scatters the state it holds. The problems found are returned together as
// a *TopicsError; a failure to talk to the cluster is another error, which
// names the topics it was about.
func EnsureTopics(ctx context.Context, adm *kadm.Client, specs []TopicSpec, allowCreate bool) error {
	if len(specs) == 0 {
		return nil
	}
	existing, missing, err := lookUp(ctx, adm, specs)
	if err != nil {
		return err
	}
	terr := &TopicsError{}
	if allowCreate {
		var raced []TopicSpec
		for _, s := range missing {
			_, err := adm.CreateTopic(ctx, s.Partitions, s.ReplicationFactor, stringPtrs(s.Configs), s.Name)
			switch {
			case err == nil:
			case errors.Is(err, kerr.TopicAlreadyExists):
				// Another instance created it since we looked; it must
				// then be checked like any existing topic.
				raced = append(raced, s)
			case s.Store != "":
				return fmt.Errorf("create internal topic %s (changelog of store %s): %w", s.Name, s.Store, err)
			default:
				return fmt.Errorf("create internal topic %s: %w", s.Name, err)
			}
		}
		if err := awaitLeaders(ctx, adm, missing); err != nil {
			return err
		}
		if len(raced) > 0 {
			more, gone, err := lookUp(ctx, adm, raced)
			if err != nil {
				return err
			}
			if len(gone) > 0 {
				return fmt.Errorf("create internal topic %s: the broker says it exists, and then that it does not", gone[0].Name)
			}
			maps.Copy(existing, more)
		}
	} else {
		for _, s := range missing {
			terr.Missing = append(terr.Missing, s.Name)
		}
		slices.Sort(terr.Missing)
	}
	if terr.Mismatches, err = check(ctx, adm, specs, existing); err != nil {
		return err
	}
	if len(terr.Missing) > 0 || len(terr.Mismatches) > 0 {
		return terr
	}
	return nil
}

// awaitLeaders waits until every topic of specs is known to the broker we
// ask, with a leader for each partition. Apache Kafka answers CreateTopics
// before every broker's metadata has the new topic (the controller
// publishes it a moment later), so a read or produce right after a create
// can be told the topic does not exist; the embedded broker creates
// synchronously and never showed this.
func awaitLeaders(ctx context.Context, adm *kadm.Client, specs []TopicSpec) error {
	if len(specs) == 0 {
		return nil
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	for attempt := 1; ; attempt++ {
		// As in lookUp, authorized operations make kadm ask the broker
		// rather than the client's metadata cache.
		details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
		if err == nil && allLed(details, specs) {
			return nil
		}
		if err := leadersBackoff.Wait(ctx, attempt); err != nil {
			return fmt.Errorf("wait for created internal topics %s: %w", strings.Join(names, ", "), err)
		}
	}
}

// leadersBackoff paces awaitLeaders' questions.
var leadersBackoff = backoff.Policy{First: 10 * time.Millisecond, Max: 500 * time.Millisecond}

func allLed(details kadm.TopicDetails, specs []TopicSpec) bool {
	for _, s := range specs {
		d, ok := details[s.Name]
		if !ok || d.Err != nil || int32(len(d.Partitions)) < s.Partitions {
			return false
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// lookUp splits specs into the topics that exist, with their partition
// counts, and those that do not, in specs' order.
func lookUp(ctx context.Context, adm *kadm.Client, specs []TopicSpec) (map[string]int32, []TopicSpec, error) {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	// kadm answers ListTopics from the kgo client's metadata cache, which
	// can hold a topic as missing for seconds after it was created (by us
	// or by another instance). Asking for authorized operations is what
	// makes kadm go to the broker: the cache does not hold them.
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
	if err != nil {
		return nil, nil, fmt.Errorf("look up internal topics %s: %w", strings.Join(names, ", "), err)
	}
	existing := map[string]int32{}
	var missing []TopicSpec
	for _, s := range specs {
		d, ok := details[s.Name]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, s)
		case d.Err != nil:
			return nil, nil, fmt.Errorf("look up internal topic %s: %w", s.Name, d.Err)
		default:
			existing[s.Name] = int32(len(d.Partitions))
		}
	}
	return existing, missing, nil
}

// check compares the existing topics with their specs.
func check(ctx context.Context, adm *kadm.Client, specs []TopicSpec, existing map[string]int32) ([]TopicMismatch, error) {
	if len(existing) == 0 {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(existing))
	configs, err := adm.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("describe configs of internal topics %s: %w", strings.Join(names, ", "), err)
	}
	var out []TopicMismatch
	for _, s := range specs {
		parts, ok := existing[s.Name]
		if !ok {
			continue
		}
		if s.Partitions > 0 && parts != s.Partitions {
			out = append(out, TopicMismatch{s.Name, "partitions", strconv.Itoa(int(parts)), strconv.Itoa(int(s.Partitions))})
		}
		rc, err := configs.On(s.Name, nil)
		if err == nil {
			err = rc.Err
		}
		if err != nil {
			return nil, fmt.Errorf("describe configs of internal topic %s: %w", s.Name, err)
		}
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		want := normalizePolicy(s.Configs[CleanupPolicy])
		if want != "" && normalizePolicy(got[CleanupPolicy]) != want {
			out = append(out, TopicMismatch{s.Name, CleanupPolicy, got[CleanupPolicy], want})
		}
		if m, bad := shortRetention(s, got[RetentionMs]); bad {
			out = append(out, m)
		}
	}
	return out, nil
}

// shortRetention reports a topic that deletes records sooner than its
// spec asks: windows the store still serves would vanish from the
// changelog. A retention of -1 keeps records forever.
func shortRetention(s TopicSpec, got string) (TopicMismatch, bool) {
	want, ok := s.Configs[RetentionMs]
	if !ok || !strings.Contains(normalizePolicy(s.Configs[CleanupPolicy]), "delete") {
		return TopicMismatch{}, false
	}
	w, err1 := strconv.ParseInt(want, 10, 64)
	g, err2 := strconv.ParseInt(got, 10, 64)
	if err1 != nil || err2 != nil || g < 0 || g >= w {
		return TopicMismatch{}, false
	}
	return TopicMismatch{s.Name, RetentionMs, got, want}, true
}

// normalizePolicy makes policies comparable: "delete, compact" and
// "compact,delete" are the same policy.
func normalizePolicy(p string) string {
	var parts []string
	for s := range strings.SplitSeq(p, ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func stringPtrs(m map[string]string) map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = kadm.StringPtr(v)
	}
	return out
}

// CheckTopicName returns an error when Kafka would refuse name as a topic
// name: empty, "." or "..", longer than 249 characters, or holding a
// character other than ASCII letters, digits, '.', '_' and '-'.
func CheckTopicName(name string) error {
	switch {
	case name == "":
		return errors.New("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > 249:
		return fmt.Errorf("topic name %.20q... is %d characters long, more than 249", name, len(name))
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !legalTopicRune(r) }); i >= 0 {
		r := []rune(name[i:])[0]
		return fmt.Errorf("topic name %q holds %q; legal are a-z A-Z 0-9 . _ -", name, r)
	}
	return nil
}

func legalTopicRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}
