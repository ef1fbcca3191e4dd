// Package golden is the golden-file check the test packages share: Check
// compares a test's output with testdata, and go test -update rewrites
// the files.
package golden
