//go:build !unix

package engine

// lockFile is a no-op where flock is not available: every instance takes
// the default state directory, as before slots were kept.
func lockFile(string) (unlock func(), ok bool, err error) {
	return func() {}, true, nil
}
