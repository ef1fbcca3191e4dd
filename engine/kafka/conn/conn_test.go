package conn_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/stoatflow/stoatctl/engine/config"
	"github.com/stoatflow/stoatctl/engine/kafka/conn"
)

// pki is a test CA with the certificates it signed.
type pki struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caPEM  []byte
	caPath string
}

func newPKI(t *testing.T, name string) *pki {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &pki{ca: ca, caKey: key, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
	p.caPath = filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(p.caPath, p.caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue signs a certificate for cn, valid from notBefore to notAfter,
// naming 127.0.0.1 and localhost.
func (p *pki) issue(t *testing.T, cn string, client bool, notBefore, notAfter time.Time, ips ...string) tls.Certificate {
	t.Helper()
	if len(ips) == 0 {
		ips = []string{"127.0.0.1"}
	}
	var addrs []net.IP
	for _, ip := range ips {
		addrs = append(addrs, net.ParseIP(ip))
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	usage := x509.ExtKeyUsageServerAuth
	if client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: addrs, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func certPEM(c tls.Certificate) (chain, key []byte) {
	chain = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	der, _ := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	return chain, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

const (
	adminUser = "admin"
	adminPass = "admin-s3cr3t-pw"
)

// cluster starts kfake over TLS with server and SCRAM-SHA-256 users;
// clientCAs, when not nil, makes the listener require a client
// certificate signed by one of them.
func cluster(t *testing.T, server tls.Certificate, clientCAs *x509.CertPool, sasl bool, opts ...kfake.Opt) string {
	t.Helper()
	tc := &tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS12}
	if clientCAs != nil {
		tc.ClientCAs, tc.ClientAuth = clientCAs, tls.RequireAndVerifyClientCert
	}
	opts = append(opts, kfake.NumBrokers(1), kfake.TLS(tc), kfake.SeedTopics(1, "words"))
	if sasl {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", adminUser, adminPass))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// list connects as values say and lists the topics, within 10 s.
func list(t *testing.T, addr string, values map[string]string) (time.Duration, error) {
	t.Helper()
	opts, err := conn.Options(config.New(values), nil)
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(addr))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = kadm.NewClient(cl).ListTopics(ctx)
	return time.Since(start), err
}

func jaas(user, pass string) string {
	return `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + pass + `";`
}

func TestConnectSASLSSL(t *testing.T) {
	ca := newPKI(t, "ca")
	server := ca.issue(t, "broker", false, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	addr := cluster(t, server, nil, true)
	dir := t.TempDir()

	p12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.ca}, "trustpw")
	if err != nil {
		t.Fatal(err)
	}
	p12Path := filepath.Join(dir, "trust.p12")
	os.WriteFile(p12Path, p12, 0o600)
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: ca.ca.Raw}}); err != nil {
		t.Fatal(err)
	}
	var jks bytes.Buffer
	if err := ks.Store(&jks, []byte("jkspw123")); err != nil {
		t.Fatal(err)
	}
	jksPath := filepath.Join(dir, "trust.jks")
	os.WriteFile(jksPath, jks.Bytes(), 0o600)

	base := map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas(adminUser, adminPass)}
	for name, trust := range map[string]map[string]string{
		"PEM file":          {"ssl.truststore.type": "PEM", "ssl.truststore.location": ca.caPath},
		"PEM inline":        {"ssl.truststore.certificates": string(ca.caPEM)},
		"PKCS12":            {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": p12Path, "ssl.truststore.password": "trustpw"},
		"JKS":               {"ssl.truststore.location": jksPath, "ssl.truststore.password": "jkspw123"},
		"no hostname check": {"ssl.truststore.certificates": string(ca.caPEM), "ssl.endpoint.identification.algorithm": ""},
		"TLS 1.2 with a suite": {"ssl.truststore.certificates": string(ca.caPEM), "ssl.enabled.protocols": "TLSv1.2",
			"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ssl.protocol": "TLSv1.2"},
	} {
		t.Run(name, func(t *testing.T) {
			values := map[string]string{}
			for k, v := range base {
				values[k] = v
			}
			for k, v := range trust {
				values[k] = v
			}
			if _, err := list(t, addr, values); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConnectFailsFast: each failure stops the first request within 10 s
// with its cause named and no secret in the message.
func TestConnectFailsFast(t *testing.T) {
	ca := newPKI(t, "ca")
	other := newPKI(t, "other-ca")
	now := time.Now()
	good := cluster(t, ca.issue(t, "broker", false, now.Add(-time.Hour), now.Add(time.Hour)), nil, true)
	expired := cluster(t, ca.issue(t, "broker", false, now.Add(-2*time.Hour), now.Add(-time.Hour)), nil, true)
	elsewhere := cluster(t, ca.issue(t, "broker", false, now.Add(-time.Hour), now.Add(time.Hour), "127.0.0.9"), nil, true)

	trusted := map[string]string{"security.protocol": "SASL_SSL", "ssl.truststore.certificates": string(ca.caPEM), "sasl.mechanism": "SCRAM-SHA-256"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	tests := []struct {
		name, addr string
		values     map[string]string
		cause      string
	}{
		// kfake closes the connection on bad credentials where Apache
		// Kafka answers SASL_AUTHENTICATION_FAILED (TestExplain, and the
		// secured real-Kafka tier): here, fast and without the secret.
		{"wrong password", good, with(trusted, "sasl.jaas.config", jaas(adminUser, "wrong-pw-9")), ""},
		{"unknown user", good, with(trusted, "sasl.jaas.config", jaas("nobody", adminPass)), ""},
		{"unknown CA", good, with(trusted, "ssl.truststore.certificates", string(other.caPEM), "sasl.jaas.config", jaas(adminUser, adminPass)), "signed by a CA the client does not trust"},
		{"expired certificate", expired, with(trusted, "sasl.jaas.config", jaas(adminUser, adminPass)), "certificate has expired or is not valid yet"},
		{"hostname", elsewhere, with(trusted, "sasl.jaas.config", jaas(adminUser, adminPass)), "does not name 127.0.0.1"},
		{"no hostname check", elsewhere, with(trusted, "sasl.jaas.config", jaas(adminUser, adminPass), "ssl.endpoint.identification.algorithm", ""), "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			took, err := list(t, tc.addr, tc.values)
			if tc.cause == "-" {
				if err != nil {
					t.Fatalf("with the hostname check off: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("connected")
			}
			err = conn.Explain(err, "", "")
			if tc.cause != "" && (!errors.Is(err, conn.ErrAuthentication) || !strings.Contains(err.Error(), tc.cause)) {
				t.Fatalf("err = %v, want an authentication failure saying %q", err, tc.cause)
			}
			if took > 10*time.Second {
				t.Errorf("took %s to fail", took)
			}
			for _, secret := range []string{adminPass, "wrong-pw-9"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error shows a password: %v", err)
				}
			}
		})
	}
}

// TestMutualTLS: a listener requiring a client certificate takes one from
// a PKCS12 keystore, a JKS keystore or inline PEM, and refuses a client
// without one, or with one its CAs did not sign.
func TestMutualTLS(t *testing.T) {
	ca := newPKI(t, "ca")
	other := newPKI(t, "other-ca")
	now := time.Now()
	pool := x509.NewCertPool()
	pool.AddCert(ca.ca)
	addr := cluster(t, ca.issue(t, "broker", false, now.Add(-time.Hour), now.Add(time.Hour)), pool, false)
	client := ca.issue(t, "app", true, now.Add(-time.Hour), now.Add(time.Hour))
	stranger := other.issue(t, "stranger", true, now.Add(-time.Hour), now.Add(time.Hour))
	dir := t.TempDir()

	p12, err := pkcs12.Modern.Encode(client.PrivateKey, client.Leaf, nil, "keypw")
	if err != nil {
		t.Fatal(err)
	}
	p12Path := filepath.Join(dir, "client.p12")
	os.WriteFile(p12Path, p12, 0o600)
	der, _ := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("app", keystore.PrivateKeyEntry{CreationTime: now, PrivateKey: der,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: client.Certificate[0]}}}, []byte("keypass1")); err != nil {
		t.Fatal(err)
	}
	var jks bytes.Buffer
	if err := ks.Store(&jks, []byte("storepass")); err != nil {
		t.Fatal(err)
	}
	jksPath := filepath.Join(dir, "client.jks")
	os.WriteFile(jksPath, jks.Bytes(), 0o600)
	chain, key := certPEM(client)
	sChain, sKey := certPEM(stranger)

	base := map[string]string{"security.protocol": "SSL", "ssl.truststore.certificates": string(ca.caPEM)}
	tests := []struct {
		name   string
		values map[string]string
		fail   string
	}{
		{"PKCS12 keystore", map[string]string{"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12Path, "ssl.keystore.password": "keypw"}, ""},
		{"JKS keystore", map[string]string{"ssl.keystore.location": jksPath, "ssl.keystore.password": "storepass", "ssl.key.password": "keypass1"}, ""},
		{"PEM inline", map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": string(chain), "ssl.keystore.key": string(key)}, ""},
		{"no certificate", map[string]string{}, "TLS: the broker refused the handshake"},
		{"certificate of another CA", map[string]string{"ssl.keystore.certificate.chain": string(sChain), "ssl.keystore.key": string(sKey)}, "TLS: the broker refused the handshake"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]string{}
			for k, v := range base {
				values[k] = v
			}
			for k, v := range tc.values {
				values[k] = v
			}
			_, err := list(t, addr, values)
			if tc.fail == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			err = conn.Explain(err, "", "")
			if err == nil || !errors.Is(err, conn.ErrAuthentication) || !strings.Contains(err.Error(), tc.fail) {
				t.Fatalf("err = %v, want %q", err, tc.fail)
			}
		})
	}
}

// TestOptionsRefuse: a configuration that cannot connect as written is
// refused before any connection, naming the key and no secret.
// TestOptionsAccept: the configurations Kafka's documentation gives for
// each mechanism make options.
func TestOptionsAccept(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	for name, values := range map[string]map[string]string{
		"MSK IAM": {"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config": "software.amazon.msk.auth.iam.IAMLoginModule required;",
			"sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"},
		"Confluent Cloud OAuth": {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
			"sasl.login.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
			"sasl.jaas.config":                  `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="id" clientSecret="s" scope="kafka" extension_logicalCluster="lkc-1" extension_identityPoolId="pool-1";`},
		"SCRAM delegation token": {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="tokenid" password="hmac" tokenauth="true";`},
		"Confluent Cloud PLAIN": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "client.dns.lookup": "use_all_dns_ips",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="KEY" password="SECRET";`},
	} {
		t.Run(name, func(t *testing.T) {
			opts, err := conn.Options(config.New(values), nil)
			if err != nil || len(opts) == 0 {
				t.Fatalf("Options = %d options, %v", len(opts), err)
			}
		})
	}
}

func TestOptionsRefuse(t *testing.T) {
	dir := t.TempDir()
	wrongP12, _ := pkcs12.Modern.EncodeTrustStore(nil, "right")
	p12Path := filepath.Join(dir, "t.p12")
	os.WriteFile(p12Path, wrongP12, 0o600)
	tests := []struct {
		name   string
		values map[string]string
		want   string
	}{
		{"bad protocol", map[string]string{"security.protocol": "TLS"}, `config security.protocol: "TLS" is not one of`},
		{"sasl keys without SASL", map[string]string{"sasl.mechanism": "PLAIN"}, "config sasl.mechanism is set but security.protocol is PLAINTEXT"},
		{"ssl keys without TLS", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas("u", "pw-x1"), "ssl.truststore.location": "/x"}, "config ssl.truststore.location is set but security.protocol is SASL_PLAINTEXT"},
		{"GSSAPI default", map[string]string{"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI (Kerberos, Kafka's default when the key is not set) is not supported"},
		{"module for another mechanism", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": jaas("u", "pw-x1")},
			"login module org.apache.kafka.common.security.scram.ScramLoginModule does not go with sasl.mechanism PLAIN"},
		{"no password", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u";`},
			"SCRAM-SHA-512 needs username and password options"},
		{"bad JAAS", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": `x required password="pw-x1"`}, "sasl.jaas.config: at character"},
		{"oauth without endpoint", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "sasl.oauthbearer.token.endpoint.url: not set"},
		{"oauth with a Java handler", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.login.callback.handler.class": "com.example.Handler"}, "com.example.Handler is a Java class stoatctl cannot run"},
		{"truststore password", map[string]string{"security.protocol": "SSL", "ssl.truststore.type": "PKCS12", "ssl.truststore.location": p12Path, "ssl.truststore.password": "pw-x1"}, "not a PKCS12 truststore this password opens"},
		{"missing truststore", map[string]string{"security.protocol": "SSL", "ssl.truststore.location": filepath.Join(dir, "none.jks")}, "config ssl.truststore.location: open"},
		{"key without chain", map[string]string{"security.protocol": "SSL", "ssl.keystore.key": "pw-x1"}, "ssl.keystore.certificate.chain and ssl.keystore.key go together"},
		{"encrypted PEM key", map[string]string{"security.protocol": "SSL", "ssl.keystore.certificate.chain": "x", "ssl.keystore.key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"}, "the key is encrypted"},
		{"hostname algorithm", map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "dns"}, `"dns" is not https or empty`},
		{"TLS 1.1", map[string]string{"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, `config ssl.enabled.protocols: "TLSv1.1" is not TLSv1.2 or TLSv1.3`},
		{"weak suite", map[string]string{"security.protocol": "SSL", "ssl.cipher.suites": "TLS_RSA_WITH_RC4_128_SHA"}, "TLS_RSA_WITH_RC4_128_SHA is not a TLS 1.2 cipher suite Go offers"},
		{"IAM profile option", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM", "sasl.jaas.config": `software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="prod";`},
			"option awsProfileName of the AWS_MSK_IAM login module is not supported"},
		{"IAM with another Java handler", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM", "sasl.client.callback.handler.class": "com.example.H"},
			"com.example.H is a Java class stoatctl cannot run"},
		{"unsecured JWT claims", map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
			"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="me" clientId="a" clientSecret="pw-x1";`},
			"option unsecuredLoginStringClaim_sub of the OAUTHBEARER login module is not supported"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Options(config.New(tc.values), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "pw-x1") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// TestAuthorizationNamed: a principal without the ACL gets one error
// naming the resource and the operation.
func TestAuthorizationNamed(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser("SCRAM-SHA-256", adminUser, adminPass),
		kfake.User("SCRAM-SHA-256", "reader", "reader-pw", kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "words", Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: kmsg.ACLOperationDescribe, Allow: true}),
		kfake.SeedTopics(1, "words"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	opts, err := conn.Options(config.New(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas("reader", "reader-pw")}), nil)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.SeedBrokers(c.ListenAddrs()[0]), kgo.DefaultProduceTopic("words"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	err = conn.Explain(err, "write", "topic words")
	if !errors.Is(err, conn.ErrAuthorization) || !strings.HasPrefix(err.Error(), "not authorized to write topic words") {
		t.Fatalf("err = %v", err)
	}
}

// TestExplain: the errors Apache Kafka and crypto/tls give for each
// failure become *Error naming the cause.
func TestExplain(t *testing.T) {
	tests := []struct {
		err                 error
		operation, resource string
		kind                error
		want                string
	}{
		{fmt.Errorf("sasl: %w", kerr.SaslAuthenticationFailed), "", "", conn.ErrAuthentication, "SASL authentication failed: the broker refused the credentials"},
		{kerr.UnsupportedSaslMechanism, "", "", conn.ErrAuthentication, "does not enable sasl.mechanism"},
		{&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, "", "", conn.ErrAuthentication, "signed by a CA the client does not trust"},
		{x509.CertificateInvalidError{Reason: x509.Expired}, "", "", conn.ErrAuthentication, "has expired"},
		{tls.RecordHeaderError{}, "", "", conn.ErrAuthentication, "did not answer in TLS"},
		{kerr.TopicAuthorizationFailed, "read", "topic words", conn.ErrAuthorization, "not authorized to read topic words: the principal has no ACL allowing it (kafka-acls --add --operation Read"},
		{kerr.GroupAuthorizationFailed, "read", "group wc", conn.ErrAuthorization, "not authorized to read group wc"},
		{kerr.TransactionalIDAuthorizationFailed, "write", "transactional id wc-1", conn.ErrAuthorization, "not authorized to write transactional id wc-1"},
		{kerr.ClusterAuthorizationFailed, "create", "", conn.ErrAuthorization, "not authorized to create the cluster"},
	}
	for _, tc := range tests {
		got := conn.Explain(tc.err, tc.operation, tc.resource)
		if !errors.Is(got, tc.kind) || !strings.HasPrefix(got.Error(), tc.want) && !strings.Contains(got.Error(), tc.want) || !conn.Fatal(tc.err) {
			t.Errorf("Explain(%v) = %v, want %v saying %q", tc.err, got, tc.kind, tc.want)
		}
	}
	if err := errors.New("other"); conn.Explain(err, "", "") != err || conn.Fatal(err) {
		t.Error("an unrelated error is explained")
	}
}
