package engine_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// BenchmarkFailover measures, for a count behind an in-memory re-key over
// STOATFLOW_BENCH_KEYS keys (1 M) on RocksDB, the time from a SIGKILL of
// the instance running the tasks to the first epoch the instance taking
// over commits, under a trickle of input: once with a warm standby
// (num.standby.replicas=1, the second instance running beside the first)
// and once with a cold instance started at the kill with no local state
// and no standbys (it waits for the dead member to leave, then restores
// every key). Both wait out the dead member's session
// (session.timeout.ms=6000). Reported: standby-s, cold-s and their ratio
// (issue 41's acceptance: with a standby, a few seconds plus the
// session timeout). On the embedded broker, or on Apache Kafka under
// STOATCTL_TEST_KAFKA=real (startKafka).
func BenchmarkFailover(b *testing.B) {
	needRocks(b)
	keys := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("STOATFLOW_BENCH_KEYS")); err == nil && v > 0 {
		keys = v
	}
	for range b.N {
		standby := failoverOnce(b, keys, true)
		cold := failoverOnce(b, keys, false)
		b.ReportMetric(standby.Seconds(), "standby-s")
		b.ReportMetric(cold.Seconds(), "cold-s")
		b.ReportMetric(standby.Seconds()/cold.Seconds(), "ratio")
	}
}

func failoverOnce(b *testing.B, keys int, warm bool) time.Duration {
	addr := startKafka(b, map[string]int32{"in": 4, "out": 4})
	dir := b.TempDir()
	const app = "crash-rekey"
	start := func(id string) *exec.Cmd {
		// Cold: no standbys, or the new instance would warm up while
		// the dead one's session runs out.
		standbys := "num.standby.replicas=0"
		if warm {
			standbys = "num.standby.replicas=1"
		}
		extra := strings.Join([]string{"group.instance.id=", "stoatflow.instance.id=" + id, standbys,
			"stoatflow.standby.interval-ms=1000", "session.timeout.ms=6000", "heartbeat.interval.ms=500"}, ";")
		cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+addr, "STOATFLOW_CRASH_LANES=2", "STOATFLOW_CRASH_TOPOLOGY=rekey",
			"STOATFLOW_CRASH_STORE=rocksDB", "STOATFLOW_CRASH_STATE_DIR="+filepath.Join(dir, id), "STOATFLOW_CRASH_EXTRA="+extra,
			"STOATFLOW_CRASH_DEBUG=1", crashLogEnv+"="+filepath.Join(dir, id+".log"))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	b.Cleanup(func() {
		if !b.Failed() {
			return
		}
		for _, id := range []string{"a", "b"} {
			log, _ := os.ReadFile(filepath.Join(dir, id+".log"))
			var keep []string
			for _, l := range strings.Split(string(log), "\n") {
				if !strings.Contains(l, "level=DEBUG") || strings.Contains(l, "standby") {
					keep = append(keep, l)
				}
			}
			b.Logf("%s.log, last lines:\n%s", id, strings.Join(keep[max(0, len(keep)-30):], "\n"))
		}
	})
	adm := kafkatest.Admin(b, addr)
	ctx := context.Background()
	committed := func() int64 {
		resp, err := adm.FetchOffsets(ctx, app)
		if err != nil {
			return -1
		}
		var n int64
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == "in" {
				n += o.At
			}
		})
		return n
	}
	a := start("a")
	in := make([]kv, keys)
	for i := range in {
		in[i] = kv{Key: "l" + strconv.Itoa(i), Value: "w" + strconv.Itoa(i)}
	}
	produce(b, addr, "in", in)
	eventually(b, 10*time.Minute, func() string { return fmt.Sprintf("committed %d of %d", committed(), keys) },
		func() bool { return committed() >= int64(keys) })
	if warm {
		// Started once a runs the tasks, so that the group keeps them
		// there (two starting together may make b the active).
		start("b")
		// Warm: a warm-up after the catch-up that found nothing new.
		eventually(b, 5*time.Minute, func() string { return "the standby never caught up" }, func() bool {
			log, _ := os.ReadFile(filepath.Join(dir, "b.log"))
			lines := strings.Split(string(log), "\n")
			for i := len(lines) - 1; i >= 0; i-- {
				if strings.Contains(lines[i], `msg="standby tasks warm"`) {
					return strings.Contains(lines[i], " records=0 ")
				}
			}
			return false
		})
	}
	// A trickle, so that the new owner has records to commit.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			produce(b, addr, "in", []kv{{Key: "t" + strconv.Itoa(i), Value: "w" + strconv.Itoa(i%keys)}})
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	eventually(b, time.Minute, func() string { return "the trickle is not committed" }, func() bool { return committed() > int64(keys) })
	if err := a.Process.Kill(); err != nil {
		b.Fatal(err)
	}
	killed := time.Now()
	_ = a.Wait()
	before := committed()
	if !warm {
		start("b")
	}
	// The new owner runs every partition, and has committed past what
	// the dead one had.
	owner := func() bool {
		groups, err := adm.DescribeGroups(ctx, app)
		if err != nil {
			return false
		}
		for _, m := range groups[app].Members {
			if as, ok := m.Assigned.AsConsumer(); ok && m.ClientID == app+"-b" {
				for _, tp := range as.Topics {
					if tp.Topic == "in" && len(tp.Partitions) == 4 {
						return true
					}
				}
			}
		}
		return false
	}
	eventually(b, 10*time.Minute, func() string { return "nothing committed after the kill" }, func() bool { return owner() && committed() > before })
	took := time.Since(killed)
	b.Logf("keys %d, standby %v: first commit %s after the kill", keys, warm, took.Round(10*time.Millisecond))
	return took
}
