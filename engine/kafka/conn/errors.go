package conn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Kind is the class of an *Error.
type Kind uint8

const (
	// Authentication is a failure to establish who the client is, or
	// that the broker is who it says: SASL credentials, a CA not trusted,
	// an expired certificate, a listener that speaks another protocol.
	Authentication Kind = iota + 1
	// Authorization is an operation the principal has no ACL for.
	Authorization
)

// Sentinels for errors.Is: every *Error is one of them, by its Kind.
var (
	ErrAuthentication = errors.New("authentication failed")
	ErrAuthorization  = errors.New("not authorized")
)

// Error is a connection refused for who the client is or what it may do.
// Retrying cannot fix it, so callers stop at once.
type Error struct {
	Kind Kind
	// Cause says what failed, naming the thing at fault.
	Cause string
	// Operation and Resource, for Authorization: "read", "topic words".
	Operation, Resource string
	// Err is the error underneath, from franz-go or crypto/tls.
	Err error
}

func (e *Error) Error() string {
	msg := e.Cause
	if e.Kind == Authorization {
		msg = fmt.Sprintf("not authorized to %s %s: the principal has no ACL allowing it (kafka-acls --add --operation %s ...)", e.Operation, e.Resource, aclOperation(e.Operation))
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAuthentication) and ErrAuthorization work.
func (e *Error) Is(target error) bool {
	return (target == ErrAuthentication && e.Kind == Authentication) || (target == ErrAuthorization && e.Kind == Authorization)
}

func aclOperation(op string) string {
	switch op {
	case "read", "write", "create", "describe", "alter":
		return map[string]string{"read": "Read", "write": "Write", "create": "Create", "describe": "Describe", "alter": "Alter"}[op]
	}
	return op
}

// Fatal says err is an authentication or authorization failure: retrying
// cannot fix it.
func Fatal(err error) bool {
	var e *Error
	return errors.As(Explain(err, "", ""), &e)
}

// Explain returns err as an *Error when it is an authentication or
// authorization failure, naming the cause; operation and resource ("read",
// "topic words") name what was asked for an authorization failure whose
// resource the broker's error does not say. Any other error comes back as
// it is.
func Explain(err error, operation, resource string) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	auth := func(cause string) error { return &Error{Kind: Authentication, Cause: cause, Err: err} }
	var (
		unknownCA x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
		header    tls.RecordHeaderError
		firstEOF  *kgo.ErrFirstReadEOF
	)
	switch {
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		return auth("SASL authentication failed: the broker refused the credentials (wrong username or password, or a user the broker does not have)")
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		return auth("SASL authentication failed: the broker's listener does not enable sasl.mechanism")
	case errors.Is(err, kerr.IllegalSaslState):
		return auth("SASL authentication failed: the broker's listener does not expect SASL (check security.protocol)")
	case errors.As(err, &unknownCA):
		return auth("TLS: the broker's certificate is signed by a CA the client does not trust (ssl.truststore.location or ssl.truststore.certificates)")
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return auth("TLS: the broker's certificate has expired or is not valid yet")
	case errors.As(err, &invalid):
		return auth("TLS: the broker's certificate is not valid")
	case errors.As(err, &hostname):
		return auth(fmt.Sprintf("TLS: the broker's certificate does not name %s (ssl.endpoint.identification.algorithm=https checks it; empty turns that off)", hostname.Host))
	case strings.Contains(err.Error(), "remote error: tls:"):
		// crypto/tls reports an alert from the peer as an unexported
		// type under a net.OpError "remote error".
		return auth("TLS: the broker refused the handshake, usually the client's certificate (ssl.keystore.*): unknown to its CAs, expired, or missing where the listener requires one")
	case errors.As(err, &header):
		return auth("TLS: the broker did not answer in TLS: its listener is not SSL or SASL_SSL (check security.protocol and the port)")
	case errors.As(err, &firstEOF):
		// A guess, not a verdict: a broker going down closes new
		// connections too, and that is retried. So a hint, not fatal.
		return fmt.Errorf("%w (if this persists: the broker's listener may require TLS or SASL that security.protocol does not give)", err)
	}
	for _, a := range []struct {
		err      error
		resource string
	}{
		{kerr.TopicAuthorizationFailed, "topic"},
		{kerr.GroupAuthorizationFailed, "group"},
		{kerr.TransactionalIDAuthorizationFailed, "transactional id"},
		{kerr.ClusterAuthorizationFailed, "the cluster"},
		{kerr.DelegationTokenAuthorizationFailed, "delegation token"},
	} {
		if errors.Is(err, a.err) {
			res := resource
			if res == "" {
				res = a.resource
			}
			if operation == "" {
				operation = "use"
			}
			return &Error{Kind: Authorization, Operation: operation, Resource: res, Err: err}
		}
	}
	return err
}
