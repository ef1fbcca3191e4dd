package conn

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/stoatflow/stoatctl/engine/config"
)

// Keys this package reads.
const (
	SecurityProtocol            = "security.protocol"
	TruststoreLocation          = "ssl.truststore.location"
	TruststorePassword          = "ssl.truststore.password"
	TruststoreType              = "ssl.truststore.type"
	TruststoreCertificates      = "ssl.truststore.certificates"
	KeystoreLocation            = "ssl.keystore.location"
	KeystorePassword            = "ssl.keystore.password"
	KeystoreType                = "ssl.keystore.type"
	KeyPassword                 = "ssl.key.password"
	KeystoreCertificateChain    = "ssl.keystore.certificate.chain"
	KeystoreKey                 = "ssl.keystore.key"
	EndpointIdentification      = "ssl.endpoint.identification.algorithm"
	EnabledProtocols            = "ssl.enabled.protocols"
	CipherSuites                = "ssl.cipher.suites"
	SASLMechanism               = "sasl.mechanism"
	SASLJAASConfig              = "sasl.jaas.config"
	OAuthTokenEndpoint          = "sasl.oauthbearer.token.endpoint.url"
	OAuthScope                  = "sasl.oauthbearer.scope"
	OAuthClientID               = "sasl.oauthbearer.client.credentials.client.id"
	OAuthClientSecret           = "sasl.oauthbearer.client.credentials.client.secret"
	LoginCallbackHandler        = "sasl.login.callback.handler.class"
	ClientCallbackHandler       = "sasl.client.callback.handler.class"
	iamClientCallbackHandler    = "software.amazon.msk.auth.iam.IAMClientCallbackHandler"
	oauthLoginCallbackHandler   = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
	oauthLoginCallbackHandlerV1 = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
)

// Keys lists every key that shapes a connection: two clients that must
// share one connection (the engine's consumer and producer are one
// franz-go client) must agree on each.
var Keys = []string{SecurityProtocol, TruststoreLocation, TruststorePassword, TruststoreType, TruststoreCertificates,
	KeystoreLocation, KeystorePassword, KeystoreType, KeyPassword, KeystoreCertificateChain, KeystoreKey, EndpointIdentification, EnabledProtocols, CipherSuites,
	SASLMechanism, SASLJAASConfig, OAuthTokenEndpoint, OAuthScope, OAuthClientID, OAuthClientSecret, LoginCallbackHandler, ClientCallbackHandler}

// The security protocols.
const (
	Plaintext     = "PLAINTEXT"
	SSL           = "SSL"
	SASLPlaintext = "SASL_PLAINTEXT"
	SASLSSL       = "SASL_SSL"
)

// protocol is security.protocol, checked.
func protocol(cfg config.Config) (string, error) {
	p := strings.ToUpper(strings.TrimSpace(cfg.String(SecurityProtocol)))
	switch p {
	case "":
		return Plaintext, nil
	case Plaintext, SSL, SASLPlaintext, SASLSSL:
		return p, nil
	}
	return "", fmt.Errorf("config %s: %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", SecurityProtocol, cfg.String(SecurityProtocol))
}

// TLSConfig is the TLS configuration of the ssl.* keys: the truststore's
// CAs (else the system's), the keystore's certificate and key when one is
// given, and hostname verification unless
// ssl.endpoint.identification.algorithm is empty. The dialer sets
// ServerName per broker.
func TLSConfig(cfg config.Config) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if err := protocols(cfg, tc); err != nil {
		return nil, err
	}
	roots, err := truststore(cfg)
	if err != nil {
		return nil, err
	}
	tc.RootCAs = roots
	cert, err := keystoreCert(cfg)
	if err != nil {
		return nil, err
	}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	alg := "https"
	if cfg.IsSet(EndpointIdentification) {
		alg = strings.TrimSpace(cfg.String(EndpointIdentification))
	}
	switch strings.ToLower(alg) {
	case "https":
	case "":
		// The chain is still verified, against the same roots, but
		// not the name: Go's verifier does both or neither, so verify
		// here.
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the broker sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	default:
		return nil, fmt.Errorf("config %s: %q is not https or empty (no hostname verification)", EndpointIdentification, alg)
	}
	return tc, nil
}

// protocols applies ssl.enabled.protocols (the TLS versions allowed) and
// ssl.cipher.suites (the TLS 1.2 suites, by the IANA names Java uses too;
// TLS 1.3's are fixed in Go) to tc.
func protocols(cfg config.Config, tc *tls.Config) error {
	if v := strings.TrimSpace(cfg.String(EnabledProtocols)); v != "" {
		tc.MinVersion, tc.MaxVersion = 0, 0
		for p := range strings.SplitSeq(v, ",") {
			var ver uint16
			switch strings.TrimSpace(p) {
			case "TLSv1.2":
				ver = tls.VersionTLS12
			case "TLSv1.3":
				ver = tls.VersionTLS13
			case "":
				continue
			default:
				return fmt.Errorf("config %s: %q is not TLSv1.2 or TLSv1.3, the versions stoatctl speaks", EnabledProtocols, strings.TrimSpace(p))
			}
			if tc.MinVersion == 0 || ver < tc.MinVersion {
				tc.MinVersion = ver
			}
			if ver > tc.MaxVersion {
				tc.MaxVersion = ver
			}
		}
		if tc.MinVersion == 0 {
			tc.MinVersion = tls.VersionTLS12
		}
	}
	if v := strings.TrimSpace(cfg.String(CipherSuites)); v != "" {
		ids := map[string]uint16{}
		for _, c := range tls.CipherSuites() {
			ids[c.Name] = c.ID
		}
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			id, ok := ids[name]
			if !ok {
				return fmt.Errorf("config %s: %s is not a TLS 1.2 cipher suite Go offers (it refuses insecure ones)", CipherSuites, name)
			}
			tc.CipherSuites = append(tc.CipherSuites, id)
		}
	}
	return nil
}

func storeType(cfg config.Config, key string) (string, error) {
	t := strings.ToUpper(strings.TrimSpace(cfg.String(key)))
	switch t {
	case "":
		return "JKS", nil
	case "JKS", "PKCS12", "PEM":
		return t, nil
	}
	return "", fmt.Errorf("config %s: %q is not one of JKS, PKCS12, PEM", key, cfg.String(key))
}

// truststore is the pool of trusted CAs; nil (the system's) when no
// truststore is configured.
func truststore(cfg config.Config) (*x509.CertPool, error) {
	loc := strings.TrimSpace(cfg.String(TruststoreLocation))
	inline := strings.TrimSpace(cfg.String(TruststoreCertificates))
	if loc == "" && inline == "" {
		return nil, nil
	}
	if loc != "" && inline != "" {
		return nil, fmt.Errorf("config %s and %s are both set: give the CAs one way", TruststoreLocation, TruststoreCertificates)
	}
	typ, err := storeType(cfg, TruststoreType)
	if err != nil {
		return nil, err
	}
	where := TruststoreCertificates
	data := []byte(inline)
	if loc != "" {
		where = TruststoreLocation + " " + loc
		if data, err = os.ReadFile(loc); err != nil {
			return nil, fmt.Errorf("config %s: %w", TruststoreLocation, err)
		}
	} else if cfg.IsSet(TruststoreType) && typ != "PEM" {
		return nil, fmt.Errorf("config %s is inline PEM, but %s is %s", TruststoreCertificates, TruststoreType, typ)
	} else {
		typ = "PEM"
	}
	var certs []*x509.Certificate
	switch typ {
	case "PEM":
		certs, err = pemCertificates(data)
	case "PKCS12":
		certs, err = pkcs12.DecodeTrustStore(data, cfg.String(TruststorePassword))
		if err != nil {
			err = fmt.Errorf("not a PKCS12 truststore this password opens: %w", err)
		}
	case "JKS":
		certs, err = jksCertificates(data, cfg.String(TruststorePassword))
	}
	if err != nil {
		return nil, fmt.Errorf("config %s (%s): %w", where, typ, err)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("config %s (%s): no certificate in it", where, typ)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

func loadJKS(data []byte, password string) (keystore.KeyStore, error) {
	ks := keystore.New(keystore.WithMinPasswordLen(0))
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return ks, fmt.Errorf("not a JKS keystore this password opens: %w", err)
	}
	return ks, nil
}

func jksCertificates(data []byte, password string) ([]*x509.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	var out []*x509.Certificate
	for _, a := range ks.Aliases() {
		var raw []byte
		switch {
		case ks.IsTrustedCertificateEntry(a):
			e, err := ks.GetTrustedCertificateEntry(a)
			if err != nil {
				return nil, err
			}
			raw = e.Certificate.Content
		case ks.IsPrivateKeyEntry(a):
			chain, err := ks.GetPrivateKeyEntryCertificateChain(a)
			if err != nil || len(chain) == 0 {
				continue
			}
			raw = chain[len(chain)-1].Content
		default:
			continue
		}
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", a, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// keystoreCert is the client's certificate for mutual TLS, nil when no
// keystore is configured.
func keystoreCert(cfg config.Config) (*tls.Certificate, error) {
	loc := strings.TrimSpace(cfg.String(KeystoreLocation))
	chain := strings.TrimSpace(cfg.String(KeystoreCertificateChain))
	key := strings.TrimSpace(cfg.String(KeystoreKey))
	if loc == "" && chain == "" && key == "" {
		return nil, nil
	}
	typ, err := storeType(cfg, KeystoreType)
	if err != nil {
		return nil, err
	}
	if loc == "" {
		if chain == "" || key == "" {
			return nil, fmt.Errorf("config %s and %s go together: the client's certificate chain and its key", KeystoreCertificateChain, KeystoreKey)
		}
		if cfg.IsSet(KeystoreType) && typ != "PEM" {
			return nil, fmt.Errorf("config %s is inline PEM, but %s is %s", KeystoreCertificateChain, KeystoreType, typ)
		}
		c, err := pemKeyPair([]byte(chain), []byte(key))
		if err != nil {
			return nil, fmt.Errorf("config %s and %s: %w", KeystoreCertificateChain, KeystoreKey, err)
		}
		return c, nil
	}
	if chain != "" || key != "" {
		return nil, fmt.Errorf("config %s and %s/%s are both set: give the client's certificate one way", KeystoreLocation, KeystoreCertificateChain, KeystoreKey)
	}
	data, err := os.ReadFile(loc)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", KeystoreLocation, err)
	}
	where := KeystoreLocation + " " + loc + " (" + typ + ")"
	var c *tls.Certificate
	switch typ {
	case "PEM":
		// One file holding the key and the chain, as Kafka reads it.
		c, err = pemKeyPair(data, data)
	case "PKCS12":
		c, err = pkcs12Cert(data, cfg.String(KeystorePassword))
	case "JKS":
		kp := cfg.String(KeyPassword)
		if !cfg.IsSet(KeyPassword) {
			kp = cfg.String(KeystorePassword)
		}
		c, err = jksCert(data, cfg.String(KeystorePassword), kp)
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", where, err)
	}
	return c, nil
}

func pemKeyPair(chain, key []byte) (*tls.Certificate, error) {
	if b, _ := pem.Decode(key); b != nil && b.Type == "ENCRYPTED PRIVATE KEY" {
		return nil, fmt.Errorf("the key is encrypted (ENCRYPTED PRIVATE KEY), which stoatctl cannot read: give it unencrypted (openssl pkey -in KEY -out PLAIN), from a file only the application reads, or use a PKCS12 keystore")
	}
	c, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

func pkcs12Cert(data []byte, password string) (*tls.Certificate, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return nil, fmt.Errorf("not a PKCS12 keystore this password opens: %w", err)
	}
	c := &tls.Certificate{PrivateKey: key, Leaf: leaf, Certificate: [][]byte{leaf.Raw}}
	for _, ca := range cas {
		c.Certificate = append(c.Certificate, ca.Raw)
	}
	return c, nil
}

func jksCert(data []byte, password, keyPassword string) (*tls.Certificate, error) {
	ks, err := loadJKS(data, password)
	if err != nil {
		return nil, err
	}
	for _, a := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(a) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(a, []byte(keyPassword))
		if err != nil {
			return nil, fmt.Errorf("entry %s: the key does not open with %s (or the keystore's password): %w", a, KeyPassword, err)
		}
		key, err := x509.ParsePKCS8PrivateKey(e.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("entry %s: %w", a, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("entry %s: a %T cannot sign a TLS handshake", a, key)
		}
		c := &tls.Certificate{PrivateKey: signer}
		for _, cc := range e.CertificateChain {
			c.Certificate = append(c.Certificate, cc.Content)
		}
		if len(c.Certificate) == 0 {
			return nil, fmt.Errorf("entry %s has no certificate", a)
		}
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("entry %s: %w", a, err)
		}
		return c, nil
	}
	return nil, errors.New("no private key entry in it")
}
