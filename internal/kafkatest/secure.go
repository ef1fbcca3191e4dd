package kafkatest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// SecureBroker is the secured real broker of scripts/kafka.sh start
// --secure: SASL_SSL with SCRAM users, an mTLS listener, a CA of its own
// and the StandardAuthorizer.
type SecureBroker struct {
	// SASLSSL is the SASL_SSL listener's address; MTLS the SSL
	// listener's, which requires a client certificate.
	SASLSSL, MTLS string
	// Dir is the broker's folder: tls/ca.pem and tls/ca.key (the CA),
	// tls/app.pem and tls/app.key (a client certificate for User:app).
	Dir string
	// Passwords are the SCRAM users' (admin, a super user; app and noacl).
	Passwords map[string]string
}

// CAFile is the PEM file of the CA that signed the broker's certificate.
func (b *SecureBroker) CAFile() string { return filepath.Join(b.Dir, "tls", "ca.pem") }

// TLSFile is a file of the broker's tls folder.
func (b *SecureBroker) TLSFile(name string) string { return filepath.Join(b.Dir, "tls", name) }

var secured struct {
	once sync.Once
	b    *SecureBroker
	err  error
}

// Secure returns the secured real broker, starting it on the first call.
// It runs in the real tier only (STOATCTL_TEST_KAFKA=real, as
// scripts/test.sh runs it) and skips elsewhere; there, a broker that
// cannot start fails the test.
func Secure(t testing.TB) *SecureBroker {
	t.Helper()
	if !Real() {
		t.Skipf("the secured broker is real Kafka: runs in the real tier (%s=real, scripts/test.sh)", ModeEnv)
	}
	secured.once.Do(func() { secured.b, secured.err = startSecure() })
	if secured.err != nil {
		t.Fatalf("secured real Kafka: %v", secured.err)
	}
	return secured.b
}

func startSecure() (*SecureBroker, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "stoatctl-test-kafka-secure-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "kafka")
	cmd := exec.Command(filepath.Join(root, "scripts", "kafka.sh"), "start", "--secure", "--watch", fmt.Sprint(os.Getpid()))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "STOATCTL_KAFKA_DIR="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/kafka.sh start --secure: %v\n%s", err, stderr.String())
	}
	b := &SecureBroker{SASLSSL: strings.TrimSpace(string(out)), Dir: dir, Passwords: map[string]string{}}
	mtls, err := os.ReadFile(filepath.Join(dir, "bootstrap-mtls"))
	if err != nil {
		return nil, err
	}
	b.MTLS = strings.TrimSpace(string(mtls))
	users, err := os.ReadFile(filepath.Join(dir, "users"))
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Fields(string(users)) {
		if name, pw, ok := strings.Cut(l, "="); ok {
			b.Passwords[name] = pw
		}
	}
	return b, nil
}
