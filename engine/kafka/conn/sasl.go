package conn

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/stoatflow/stoatctl/engine/config"
)

// The SASL mechanisms.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	AWSMSKIAM   = "AWS_MSK_IAM"
	GSSAPI      = "GSSAPI"
)

// moduleOf is the login module each mechanism's credentials come from.
var moduleOf = map[string]string{Plain: plainModule, ScramSHA256: scramModule, ScramSHA512: scramModule, OAuthBearer: oauthModule, AWSMSKIAM: iamModule}

// Mechanism is the SASL mechanism of sasl.mechanism with its credentials
// from sasl.jaas.config (and, for OAUTHBEARER, the
// sasl.oauthbearer.* keys).
func Mechanism(cfg config.Config) (sasl.Mechanism, error) {
	name := strings.ToUpper(strings.TrimSpace(cfg.String(SASLMechanism)))
	if name == "" || name == GSSAPI {
		// Kafka's default is GSSAPI: a properties file without the key
		// means Kerberos.
		return nil, fmt.Errorf("config %s: GSSAPI (Kerberos, Kafka's default when the key is not set) is not supported; want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", SASLMechanism)
	}
	module, ok := moduleOf[name]
	if !ok {
		return nil, fmt.Errorf("config %s: %q is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, AWS_MSK_IAM", SASLMechanism, cfg.String(SASLMechanism))
	}
	var opts map[string]string
	if raw := strings.TrimSpace(cfg.String(SASLJAASConfig)); raw != "" {
		j, err := ParseJAAS(raw)
		if err != nil {
			return nil, err
		}
		if j.Module != module {
			return nil, fmt.Errorf("config %s: login module %s does not go with %s %s; want %s", SASLJAASConfig, j.Module, SASLMechanism, name, module)
		}
		opts = j.Options
	}
	if err := knownOptions(name, opts); err != nil {
		return nil, err
	}
	switch name {
	case Plain, ScramSHA256, ScramSHA512:
		user, pass := opts["username"], opts["password"]
		if user == "" || pass == "" {
			return nil, fmt.Errorf("config %s: %s needs username and password options in %s", SASLJAASConfig, name, module)
		}
		if name == Plain {
			return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
		}
		// tokenauth="true": a delegation token's id and HMAC as the
		// username and password (KIP-48).
		a := scram.Auth{User: user, Pass: pass, IsToken: strings.EqualFold(opts["tokenauth"], "true")}
		if name == ScramSHA256 {
			return a.AsSha256Mechanism(), nil
		}
		return a.AsSha512Mechanism(), nil
	case OAuthBearer:
		if h := strings.TrimSpace(cfg.String(LoginCallbackHandler)); h != "" && h != oauthLoginCallbackHandler && h != oauthLoginCallbackHandlerV1 {
			return nil, fmt.Errorf("config %s: %s is a Java class stoatctl cannot run; it gets OAUTHBEARER tokens itself (client credentials against %s)", LoginCallbackHandler, h, OAuthTokenEndpoint)
		}
		src, err := newTokenSource(cfg, opts)
		if err != nil {
			return nil, err
		}
		return src.mechanism(), nil
	}
	if h := strings.TrimSpace(cfg.String(ClientCallbackHandler)); h != "" && h != iamClientCallbackHandler {
		return nil, fmt.Errorf("config %s: %s is a Java class stoatctl cannot run; AWS_MSK_IAM signs with the environment's AWS credentials", ClientCallbackHandler, h)
	}
	// AWS_MSK_IAM: the environment's credentials, as the AWS tools read
	// them first. franz-go signs each connection's authentication with
	// them.
	return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) {
		a := aws.Auth{AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), SecretKey: os.Getenv("AWS_SECRET_ACCESS_KEY"), SessionToken: os.Getenv("AWS_SESSION_TOKEN")}
		if a.AccessKey == "" || a.SecretKey == "" {
			return a, fmt.Errorf("%s %s: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set", SASLMechanism, AWSMSKIAM)
		}
		return a, nil
	}), nil
}

// knownOptions refuses a login module option stoatctl would otherwise
// drop: one the mechanism has no use for here (IAMLoginModule's
// awsProfileName, OAuthBearerLoginModule's unsecuredLoginStringClaim_sub)
// would change what a Java client does.
func knownOptions(mechanism string, opts map[string]string) error {
	var unknown []string
	for k := range opts {
		switch mechanism {
		case Plain:
			if k == "username" || k == "password" {
				continue
			}
		case ScramSHA256, ScramSHA512:
			if k == "username" || k == "password" || k == "tokenauth" {
				continue
			}
		case OAuthBearer:
			if k == "clientId" || k == "clientSecret" || k == "scope" || strings.HasPrefix(k, "extension_") {
				continue
			}
		}
		unknown = append(unknown, k)
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("config %s: option %s of the %s login module is not supported by stoatctl (it would be ignored, and the login would differ from Kafka's)",
		SASLJAASConfig, strings.Join(unknown, ", "), mechanism)
}
