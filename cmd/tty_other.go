//go:build !linux

package cmd

import "os"

// isTerminal tells a terminal from a pipe or a file; elsewhere than Linux
// it takes any character device for one.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
