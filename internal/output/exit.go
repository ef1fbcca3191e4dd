package output

import (
	"errors"
	"net"
	"syscall"
)

// Exit codes, the same in every command.
const (
	ExitOK = 0
	// ExitFailure is a command that ran and failed (a replay mismatch, a
	// refused configuration, an error from Kafka).
	ExitFailure = 1
	// ExitUsage is a command line that cannot run: an unknown command,
	// flag or format, a missing or extra argument, a bad flag value.
	ExitUsage = 2
	// ExitUnreachable is a command that could not reach what it talks
	// to: no Kafka broker or REST endpoint answered.
	ExitUnreachable = 3
)

// ErrUnreachable marks an error as "nothing answered"; Unreachable also
// recognises the network's own errors without it.
var ErrUnreachable = errors.New("unreachable")

// Unreachable reports whether err means nothing answered at the address a
// command was given: a refused or failed dial, an unknown host, a network
// or host that cannot be reached, or an error wrapping ErrUnreachable.
// franz-go wraps the dial error it last met ("unable to dial: %w"), and
// net/http the same (*url.Error), so a broker or REST endpoint that is not
// there is recognised through either client.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnreachable) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
