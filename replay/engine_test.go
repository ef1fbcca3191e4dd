package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/internal/kafkatest"
	"github.com/stoatflow/stoatctl/replay"
)

// TestFixturesDirEngine runs every fixture under fixtures/ through the
// live engine, on one embedded broker shared by all, as `stoatctl replay
// --engine fixtures/` does, and fails on any that neither passes nor
// differs from the driver only in timing. Each fixture's time is logged.
func TestFixturesDirEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine once per fixture; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	paths, err := replay.Expand([]string{fixturesDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		rel, err := filepath.Rel(fixturesDir, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			start := time.Now()
			r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr})
			t.Logf("%s in %s", r.Status, time.Since(start).Round(time.Millisecond))
			if r.Status != replay.Pass && r.Status != replay.TimingOnly {
				t.Errorf("%s under --engine\n%s", r.Status, report(t, r))
			}
		})
	}
}

// TestEngineStatuses checks that engine mode can fail, and tells a
// difference only in timing from a failure: the same fixtures as
// TestStatuses, on the engine.
func TestEngineStatuses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine once per fixture; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	want := map[string]replay.Status{
		"testdata/pass/uppercase.fixture.yaml":         replay.Pass,
		"testdata/pass/timing.fixture.yaml":            replay.Pass,
		"testdata/pass/multiset.fixture.yaml":          replay.Pass,
		"testdata/fail/altered.fixture.yaml":           replay.Fail,
		"testdata/fail/missing-topic.fixture.yaml":     replay.Fail,
		"testdata/fail/timing.fixture.yaml":            replay.Fail,
		"testdata/engine/store-altered.fixture.yaml":   replay.Fail,
		"testdata/engine/timing-only.fixture.yaml":     replay.TimingOnly,
		"testdata/error/unknown-topology.fixture.yaml": replay.Errored,
	}
	for path, status := range want {
		t.Run(path, func(t *testing.T) {
			r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr})
			if r.Status != status {
				t.Errorf("%s, want %s\n%s", r.Status, status, report(t, r))
			}
			if status == replay.TimingOnly {
				// The driver, which has no such excuse, fails it.
				if d := replay.RunFile(path); d.Status != replay.Fail {
					t.Errorf("driver: %s, want fail", d.Status)
				}
				got := report(t, r)
				for _, s := range []string{"TIMING " + path, "differs from the driver only in timing", "(1 of the passed only in timing)"} {
					if !strings.Contains(got, s) {
						t.Errorf("report lacks %q:\n%s", s, got)
					}
				}
			}
		})
	}
}

// TestEngineGlobalTable runs a fixture that writes a global table's topic
// as well as a stream topic through the driver and the live engine: a
// step that writes the global topic settles once the engine's global
// runner has read it to its end, so every later order meets the table as
// the driver's does, and both pass the same expectations (not merely in
// timing). Before the settle knew global topics, the first such step never
// settled.
func TestEngineGlobalTable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	const path = fixturesDir + "/enrich-products/products.fixture.yaml"
	if d := replay.RunFile(path); d.Status != replay.Pass {
		t.Fatalf("driver: %s, want pass\n%s", d.Status, report(t, d))
	}
	for _, lanes := range []int{1, 4} {
		t.Run(fmt.Sprintf("lanes=%d", lanes), func(t *testing.T) {
			r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr, Lanes: lanes, StepTimeout: 20 * time.Second})
			if r.Status != replay.Pass {
				t.Errorf("engine: %s, want pass\n%s", r.Status, report(t, r))
			}
		})
	}
}

// TestEngineSuppressedTableJoin runs the stock-listings fixture, a
// table-table join of a table suppressed until a time limit, through the
// driver and through the live engine on one and on four lanes: the join
// reads the suppression buffer's store in the lane that owns the key, so
// a product update meets the stock last released and never one held
// back, as the driver's does (and as Kafka Streams' SuppressScenarioTest
// .shouldWorkBeforeJoinLeft/Right expect), not merely in timing.
func TestEngineSuppressedTableJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	const path = fixturesDir + "/stock-listings/listings.fixture.yaml"
	if d := replay.RunFile(path); d.Status != replay.Pass {
		t.Fatalf("driver: %s, want pass\n%s", d.Status, report(t, d))
	}
	for _, lanes := range []int{1, 4} {
		t.Run(fmt.Sprintf("lanes=%d", lanes), func(t *testing.T) {
			r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr, Lanes: lanes, StepTimeout: 20 * time.Second})
			if r.Status != replay.Pass {
				t.Errorf("engine: %s, want pass\n%s", r.Status, report(t, r))
			}
		})
	}
}

// TestEngineForeignKeyJoin runs the order-customers fixture, a
// foreign-key left join, through the driver and through the live engine
// on one and on four lanes: subscriptions cross to the lane of the
// customer they name, responses back to the lane of their order, and
// every row is the driver's (as Kafka Streams'
// KTableKTableForeignKeyJoinIntegrationTest expects them), not merely in
// timing.
func TestEngineForeignKeyJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	const path = fixturesDir + "/order-customers/rows.fixture.yaml"
	if d := replay.RunFile(path); d.Status != replay.Pass {
		t.Fatalf("driver: %s, want pass\n%s", d.Status, report(t, d))
	}
	for _, lanes := range []int{1, 4} {
		t.Run(fmt.Sprintf("lanes=%d", lanes), func(t *testing.T) {
			r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr, Lanes: lanes, StepTimeout: 20 * time.Second})
			if r.Status != replay.Pass {
				t.Errorf("engine: %s, want pass\n%s", r.Status, report(t, r))
			}
		})
	}
}

// TestEngineLargeRecordsFile runs a records-file step longer than one
// batch of the records file (4,096 records) on the live engine: every
// record comes out once. Engine mode once drained the driver's outputs
// there, which it has none of, and panicked.
func TestEngineLargeRecordsFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the engine; skipped with -short")
	}
	kafkatest.EmbeddedOnly(t)
	addr := kafkatest.Start(t, nil)
	const n = 5000
	dir := t.TempDir()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, `{"topic":"sentences","key":"k%d","value":"v%d","timestamp":%d}`+"\n", i%97, i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "in.jsonl"), []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "large.fixture.yaml")
	fixture := fmt.Sprintf("topology: uppercase\nsteps:\n  - records-file: in.jsonl\nexpect:\n  outputs:\n    shouted: {count: %d}\n", n)
	if err := os.WriteFile(path, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := replay.RunFile(path); d.Status != replay.Pass {
		t.Fatalf("driver: %s, want pass\n%s", d.Status, report(t, d))
	}
	r := replay.RunEngineFile(context.Background(), path, replay.EngineOptions{Bootstrap: addr})
	if r.Status != replay.Pass {
		t.Errorf("engine: %s, want pass\n%s", r.Status, report(t, r))
	}
}
