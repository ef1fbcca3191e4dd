package conn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/stoatflow/stoatctl/engine/config"
)

// DialFunc dials a broker; nil is a net.Dialer's.
type DialFunc func(ctx context.Context, network, host string) (net.Conn, error)

// Options are the franz-go options that connect a client as cfg's
// security keys say: over TLS under SSL and SASL_SSL, authenticated under
// SASL_PLAINTEXT and SASL_SSL. cfg is the client's view (config.ForClient).
// dial, when not nil, makes the connection TLS then runs over (a test's
// fault injection). Errors name the key at fault, never a secret.
func Options(cfg config.Config, dial DialFunc) ([]kgo.Opt, error) {
	p, err := protocol(cfg)
	if err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	var tc *tls.Config
	if p == SSL || p == SASLSSL {
		if tc, err = TLSConfig(cfg); err != nil {
			return nil, err
		}
	} else if unused := setKeys(cfg, "ssl."); len(unused) > 0 {
		return nil, fmt.Errorf("config %s is set but %s is %s, which does not use TLS: set %s SSL or SASL_SSL", strings.Join(unused, ", "), SecurityProtocol, p, SecurityProtocol)
	}
	if tc != nil || dial != nil {
		opts = append(opts, kgo.Dialer(tlsDialer(tc, dial)))
	}
	if p == SASLPlaintext || p == SASLSSL {
		m, err := Mechanism(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(m))
	} else if unused := setKeys(cfg, "sasl."); len(unused) > 0 {
		return nil, fmt.Errorf("config %s is set but %s is %s, which does not use SASL: set %s SASL_PLAINTEXT or SASL_SSL", strings.Join(unused, ", "), SecurityProtocol, p, SecurityProtocol)
	}
	return opts, nil
}

// setKeys are the keys of cfg under prefix that hold a value, sorted.
func setKeys(cfg config.Config, prefix string) []string {
	var out []string
	for _, k := range cfg.Keys() {
		if strings.HasPrefix(k, prefix) && strings.TrimSpace(cfg.String(k)) != "" && k != EndpointIdentification {
			out = append(out, k)
		}
	}
	return out
}

// tlsDialer dials with dial (a net.Dialer's when nil) and, when tc is not
// nil, runs TLS over the connection with the broker's host as its server
// name.
func tlsDialer(tc *tls.Config, dial DialFunc) func(ctx context.Context, network, host string) (net.Conn, error) {
	if dial == nil {
		d := &net.Dialer{Timeout: 10 * time.Second}
		dial = d.DialContext
	}
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := dial(ctx, network, host)
		if err != nil || tc == nil {
			return c, err
		}
		cfg := tc.Clone()
		if cfg.ServerName == "" {
			name, _, err := net.SplitHostPort(host)
			if err != nil {
				name = host
			}
			cfg.ServerName = name
		}
		tlsConn := tls.Client(c, cfg)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tlsConn, nil
	}
}

// Differ names the first connection key on which a and b disagree, or "":
// two clients that must share one connection (one franz-go client) must
// agree on each.
func Differ(a, b config.Config) string {
	for _, k := range slices.Sorted(slices.Values(Keys)) {
		if strings.TrimSpace(a.String(k)) != strings.TrimSpace(b.String(k)) {
			return k
		}
	}
	return ""
}
