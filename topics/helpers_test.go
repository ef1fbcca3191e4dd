package topics_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func contextWithTimeout(t *testing.T, seconds int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), time.Duration(seconds)*time.Second)
}

// describeConfig reads one topic config with a client of its own.
func describeConfig(t *testing.T, addr, topic, key string) (string, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return "", err
	}
	defer cl.Close()
	rs, err := kadm.NewClient(cl).DescribeTopicConfigs(t.Context(), topic)
	if err != nil {
		return "", err
	}
	r, err := rs.On(topic, nil)
	if err != nil {
		return "", err
	}
	for _, c := range r.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value, nil
		}
	}
	return "", nil
}
