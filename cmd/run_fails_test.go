package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestRunKeepsTheBrokerAfterAFailure: a record that does not deserialize
// stops the engine under stoatctl run on the embedded broker; the broker
// stays up (the record can be read from it) until Ctrl-C, the message
// names the handler that would skip the record and how to read it, the
// state goes from RUNNING straight to ERROR, and the exit code is 1.
func TestRunKeepsTheBrokerAfterAFailure(t *testing.T) {
	kafkatest.EmbeddedOnly(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- RunContext(ctx, []string{"run", "-t", "testdata/run-fails-topology.yaml", "--broker-port", "0", "--partitions", "1",
			"--http", "off", "-X", "num.stream.threads=1", "-X", "stoatflow.commit-barrier.interval-ms=100"}, stdout, stderr)
	}()
	wait := func(what string, cond func() bool) {
		t.Helper()
		for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			select {
			case code := <-done:
				t.Fatalf("stoatctl run exited %d while waiting for %s; stderr:\n%s", code, what, stderr)
			default:
			}
			if time.Now().After(end) {
				t.Fatalf("no %s within 30 s; stderr:\n%s", what, stderr)
			}
		}
	}
	wait("broker address", func() bool { return strings.HasSuffix(stdout.String(), "\n") })
	addr := strings.TrimSpace(stdout.String())
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("numbers"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	good := []byte{0, 0, 0, 0, 0, 0, 0, 21}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("a"), Value: good}, &kgo.Record{Key: []byte("b"), Value: []byte("bad")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wait("notice that the broker stays up", func() bool { return strings.Contains(stderr.String(), "stop the broker with Ctrl-C") })

	// Still up after the failure: the record at fault reads back, with
	// the command the notice gives.
	var readOut, readErr bytes.Buffer
	if code := Run([]string{"topic", "read", "-b", addr, "-t", "numbers", "--from", "offset:1", "--to", "offset:2", "-o", "json"}, &readOut, &readErr); code != 0 ||
		!strings.Contains(readOut.String(), `"value":"bad"`) {
		t.Fatalf("topic read on the kept broker: exit %d, stdout %q, stderr %q", code, readOut.String(), readErr.String())
	}
	select {
	case code := <-done:
		t.Fatalf("stoatctl run exited %d before Ctrl-C", code)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitFailure {
			t.Fatalf("exit %d after the failure and Ctrl-C, want 1; stderr:\n%s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("stoatctl run did not exit within 30 s of Ctrl-C")
	}

	log := stderr.String()
	var states []string
	for _, m := range regexp.MustCompile(`msg="state change" from=\S+ to=(\S+)`).FindAllStringSubmatch(log, -1) {
		states = append(states, m[1])
	}
	if n := len(states); n < 2 || states[n-2] != "RUNNING" || states[n-1] != "ERROR" {
		t.Errorf("states %v, want RUNNING then ERROR at the end", states)
	}
	// The notice, and the error again as the last line.
	i := strings.Index(log, "stoatctl run: the engine stopped")
	j := strings.Index(log, "stop the broker with Ctrl-C\n")
	if i < 0 || j < i {
		t.Fatalf("no notice in stderr:\n%s", log)
	}
	notice := log[i:j+len("stop the broker with Ctrl-C\n")] + lastLine(log)
	checkGolden(t, "run_fails_kept_broker", strings.ReplaceAll(notice, addr, "ADDR"))
}

func lastLine(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return s[strings.LastIndex(s, "\n")+1:] + "\n"
}

// TestRunKeptBrokerNotice is the notice for a failure that names no
// record: it lists every source topic.
func TestRunKeptBrokerNotice(t *testing.T) {
	var b bytes.Buffer
	writeKeptUp(&b, "stoatctl run", "127.0.0.1:9092", errors.New("engine: commit failed"), []string{"customers", "orders"})
	checkGolden(t, "run_fails_kept_broker_no_record", b.String())
}

// TestEffectiveConfigHidesCredentials: the effective-configuration log
// line shows neither basic.auth.user.info nor the password in a
// registry URL.
func TestEffectiveConfigHidesCredentials(t *testing.T) {
	src := newConfigSources()
	src.set("schema.registry.url", "http://reg:s3cret@registry:8081", "flag -X")
	src.set("basic.auth.user.info", "reg:t0psecret", "flag -X")
	var b bytes.Buffer
	logEffectiveConfig(newLogger(&b, "text", slog.LevelInfo), src)
	if s := b.String(); strings.Contains(s, "s3cret") || strings.Contains(s, "t0psecret") || !strings.Contains(s, "http://reg:xxxxx@registry:8081") {
		t.Fatalf("effective configuration line: %s", s)
	}
}

// TestEffectiveConfigPrintsValues: with nothing set, every key on the
// effective configuration line has a value its key accepts, never the
// catalogue's phrase for people ("number of CPUs ...").
func TestEffectiveConfigPrintsValues(t *testing.T) {
	var b bytes.Buffer
	logEffectiveConfig(newLogger(&b, "json", slog.LevelInfo), newConfigSources())
	var line struct {
		Config map[string]string `json:"config"`
	}
	if err := json.Unmarshal(b.Bytes(), &line); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(line.Config) < 20 {
		t.Fatalf("the line has %d keys:\n%s", len(line.Config), b.String())
	}
	for k, v := range line.Config {
		value, ok := strings.CutSuffix(v, " (default)")
		if !ok {
			t.Errorf("%s = %q: not a default, yet nothing was set", k, v)
			continue
		}
		for _, p := range config.Check(map[string]string{k: value}) {
			if p.Kind == config.Invalid {
				t.Errorf("%s = %q: not a value of the key: %s", k, value, p)
			}
		}
		for _, phrase := range []string{"number of CPUs", "kept in", "by processing.guarantee", "temporary directory", "else"} {
			if strings.Contains(value, phrase) {
				t.Errorf("%s = %q: a description, not a value", k, value)
			}
		}
	}
	if got, want := line.Config[config.NumStreamThreads], strconv.Itoa(runtime.NumCPU())+" (default)"; got != want {
		t.Errorf("%s = %q, want %q", config.NumStreamThreads, got, want)
	}
	if got := line.Config["isolation.level"]; got != "read_committed (default)" {
		t.Errorf("isolation.level = %q under exactly-once", got)
	}
}
