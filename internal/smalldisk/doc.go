// Package smalldisk gives tests a disk that fills up: a tmpfs of a given
// size, mounted on a test's temporary directory. Mounting needs root and
// CAP_SYS_ADMIN (CI runs as root); without them a test is skipped, except
// under CI, where it fails, so that CI cannot pass without running it.
package smalldisk
