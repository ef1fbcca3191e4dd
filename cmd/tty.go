package cmd

import (
	"os"

	"github.com/charmbracelet/x/term"
)

// isTerminal tells a terminal from a pipe, a file or /dev/null (a
// character device too), as watch's check does.
func isTerminal(f *os.File) bool { return term.IsTerminal(f.Fd()) }
