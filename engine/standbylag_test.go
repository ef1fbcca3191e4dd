package engine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine"
	"github.com/stoatflow/stoatctl/inspect"
	"github.com/stoatflow/stoatctl/internal/kafkatest"
)

// TestStandbyLagIsObserved: a topology that cannot be split on two
// instances with num.standby.replicas=1, the standby's warm-ups slowed
// (stoatflow.standby.interval-ms=1500). Through the standby's REST API,
// GET /info gives every standby task a lag that falls to 0 once its
// warm-ups caught up, rises while the active writes between warm-ups and
// falls to 0 again; GET /metrics, which promtool accepts, says the same
// in stoatflow_standby_lag_records, stoatflow_standby_lag_max_records and
// stoatflow_standby_tasks.
func TestStandbyLagIsObserved(t *testing.T) {
	kafkatest.Parallel(t)
	needRocks(t)
	addr := startBroker(t, map[string]int32{"in": 4, "out": 4})
	const keys, per = 200, 6
	input := func(round int) []kv {
		var in []kv
		for i := range keys * per / 2 {
			in = append(in, kv{Key: fmt.Sprintf("r%d-%d", round, i), Value: "k" + strconv.Itoa(i%keys)})
		}
		return in
	}
	conf := func(id, every string) map[string]string {
		return storeCfg(addr, "standby-lag", "rocksDB", t.TempDir(), "stoatflow.instance.id", id, "num.standby.replicas", "1",
			"stoatflow.standby.interval-ms", every, "session.timeout.ms", "6000", engine.MetricsRecordingLevel, "debug")
	}
	a, stopA := runEngine(t, rekeyedCounts(), conf("a", "200"))
	defer func() {
		if err := stopA(); err != nil {
			t.Errorf("instance a: %v", err)
		}
	}()
	produce(t, addr, "in", input(0))
	readCommitted(t, addr, "out", keys*per/2, 60*time.Second)

	b, stopB := runEngine(t, rekeyedCounts(), conf("b", "1500"), engine.WithHTTP(engine.HTTP{Addr: "127.0.0.1:0"}))
	defer func() {
		if err := stopB(); err != nil {
			t.Errorf("instance b: %v", err)
		}
	}()
	eventually(t, 10*time.Second, func() string { return "b's API never listened" }, func() bool { return b.HTTPAddr() != "" })
	get := func(path string) ([]byte, error) {
		resp, err := http.Get("http://" + b.HTTPAddr() + path)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
	var info inspect.Info
	var infoErr error
	readInfo := func() bool {
		var body []byte
		if body, infoErr = get("/info"); infoErr == nil {
			info = inspect.Info{}
			infoErr = json.Unmarshal(body, &info)
		}
		return infoErr == nil
	}
	// lags are the standby lags of the last /info, -1 for one not
	// measured; every says whether each lag is measured and meets ok.
	lags := func() []int64 {
		var out []int64
		for _, sb := range info.Standbys {
			if sb.LagRecords == nil {
				out = append(out, -1)
			} else {
				out = append(out, *sb.LagRecords)
			}
		}
		return out
	}
	every := func(ok func(int64) bool) bool {
		return len(info.Standbys) > 0 && !slices.ContainsFunc(lags(), func(l int64) bool { return l < 0 || !ok(l) })
	}
	describe := func(want string) func() string {
		return func() string {
			return fmt.Sprintf("want %s; /info (err %v): standbyTasks %v, standbys %+v, lags %v; b runs %v", want, infoErr, info.StandbyTasks, info.Standbys, lags(), b.Assignment())
		}
	}
	caughtUp := func() bool {
		return readInfo() && len(b.Assignment()) == 0 && every(func(l int64) bool { return l == 0 })
	}

	eventually(t, 60*time.Second, describe("every standby task measured at lag 0"), caughtUp)
	if len(info.Standbys) != len(info.StandbyTasks) || len(a.Standbys()) != 0 {
		t.Fatalf("b lists %d standbys for %d standby tasks (%v), a keeps %v", len(info.Standbys), len(info.StandbyTasks), info.StandbyTasks, a.Standbys())
	}
	for i, sb := range info.Standbys {
		if sb.Task != info.StandbyTasks[i] || sb.Warmup {
			t.Errorf("standby %d is %+v; want task %s, no warm-up", i, sb, info.StandbyTasks[i])
		}
	}
	scrape, err := get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	promtoolCheckMetrics(t, scrape)
	for _, want := range []string{"stoatflow_standby_tasks " + strconv.Itoa(len(info.StandbyTasks)) + "\n", "stoatflow_standby_warmup_tasks 0\n",
		"stoatflow_standby_lag_max_records 0\n", `stoatflow_standby_lag_records{task="` + info.StandbyTasks[0] + `"} 0` + "\n"} {
		if !bytes.Contains(scrape, []byte(want)) {
			t.Errorf("b's scrape lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("b's scrape:\n%s", scrape)
	}

	// The active writes while the standby waits out its interval: the
	// next warm-up finds it behind, in /info and /metrics alike.
	produce(t, addr, "in", input(1))
	var most float64
	eventually(t, 60*time.Second, describe("a standby lag above 0 in /info and /metrics"), func() bool {
		if !readInfo() || !slices.ContainsFunc(lags(), func(l int64) bool { return l > 0 }) {
			return false
		}
		m, err := get("/metrics")
		if err != nil {
			return false
		}
		v, ok := sumSeries(string(m), "stoatflow_standby_lag_max_records ")
		most = v
		return ok && v > 0
	})
	t.Logf("standby lags while the active writes: %v (largest in /metrics %g)", lags(), most)
	readCommitted(t, addr, "out", keys*per, 60*time.Second)
	eventually(t, 60*time.Second, describe("every standby task back at lag 0"), caughtUp)
}

// promtoolCheckMetrics runs promtool check metrics on a scrape when
// promtool is installed (CI installs it) and accepts nothing it says: no
// lint, no error (as cmd's promtoolCheck).
func promtoolCheckMetrics(t *testing.T, scrape []byte) {
	t.Helper()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool is not installed; CI needs Debian's prometheus package (scripts/test.sh installs it)")
		}
		t.Log("promtool is not installed (Debian's prometheus package); skipping promtool check metrics")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" {
			t.Errorf("promtool check metrics: %s", line)
		}
	}
	if err != nil {
		t.Errorf("promtool check metrics exited %d: %s", exit.ExitCode(), out)
	}
}
