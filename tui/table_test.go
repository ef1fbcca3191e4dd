package tui

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stoatflow/stoatctl/internal/golden"
)

// TestOnceOutput: what `--once` prints, -o table and -o json, for a few
// scenarios read in once mode (three polls, stalls judged across them),
// against testdata/once (go test ./tui -update rewrites them).
func TestOnceOutput(t *testing.T) {
	for _, name := range []string{"normal", "stalled", "alignment", "unreachable"} {
		t.Run(name, func(t *testing.T) {
			samples := scenarios[name].samples()
			samples = samples[len(samples)-3:]
			if name == "unreachable" {
				samples = scenarios[name].samples()[3:6] // two answers, then none
			}
			v := observeAll(Options{SkewThreshold: testOptions.SkewThreshold}, samples)
			v.Endpoint = "http://127.0.0.1:8080"
			var table bytes.Buffer
			if err := WriteTable(&table, v); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "./tui", "testdata/once/"+name+".table", table.String())
			js, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "./tui", "testdata/once/"+name+".json", string(js)+"\n")
		})
	}
}
