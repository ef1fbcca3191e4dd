package cmd

import (
	"strings"
	"testing"
)

// TestRootHelpNamesEveryCommand: the root help's description names every
// top-level command that exists, so it cannot again call built commands
// "coming" (the first-hour issue found it saying so of run and replay).
func TestRootHelpNamesEveryCommand(t *testing.T) {
	root := NewRootCommand()
	for _, c := range root.Commands() {
		switch name := c.Name(); {
		case c.Hidden, name == "help", name == "completion", name == "version", name == "config":
			// Plumbing, not what the tool is for.
		case !strings.Contains(root.Long, "("+name+")"):
			t.Errorf("the root help does not name the %s command; it says:\n%s", name, root.Long)
		}
	}
	if strings.Contains(root.Long, "are coming") {
		t.Errorf("the root help still promises what exists: %q", root.Long)
	}
}
