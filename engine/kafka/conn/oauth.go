package conn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/stoatflow/stoatctl/engine/config"
)

// tokenSource gets OAUTHBEARER tokens from an OAuth 2 token endpoint with
// the client credentials grant, as Kafka's OAuthBearerLoginCallbackHandler
// does, and keeps one until most of its life has passed: every new
// connection authenticates with the token in hand, and one past that point
// fetches a fresh one first.
type tokenSource struct {
	endpoint, clientID, clientSecret, scope string
	extensions                              map[string]string
	http                                    *http.Client
	now                                     func() time.Time

	mu      sync.Mutex
	token   string
	refresh time.Time
}

// refreshFactor is the part of a token's life after which it is refreshed
// (Kafka's sasl.login.refresh.window.factor).
const refreshFactor = 0.8

func newTokenSource(cfg config.Config, jaas map[string]string) (*tokenSource, error) {
	pick := func(key, option string) string {
		if v := strings.TrimSpace(cfg.String(key)); v != "" {
			return v
		}
		return jaas[option]
	}
	t := &tokenSource{
		endpoint:     strings.TrimSpace(cfg.String(OAuthTokenEndpoint)),
		clientID:     pick(OAuthClientID, "clientId"),
		clientSecret: pick(OAuthClientSecret, "clientSecret"),
		scope:        pick(OAuthScope, "scope"),
		extensions:   map[string]string{},
		http:         &http.Client{Timeout: 10 * time.Second},
		now:          time.Now,
	}
	for k, v := range jaas {
		// Extensions go with the token (Confluent Cloud's
		// logicalCluster and identityPoolId).
		if name, ok := strings.CutPrefix(k, "extension_"); ok {
			t.extensions[name] = v
		}
	}
	if t.endpoint == "" {
		return nil, fmt.Errorf("config %s: not set; OAUTHBEARER gets its tokens there", OAuthTokenEndpoint)
	}
	if u, err := url.Parse(t.endpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("config %s: %q is not an http(s) URL", OAuthTokenEndpoint, t.endpoint)
	}
	if t.clientID == "" || t.clientSecret == "" {
		return nil, fmt.Errorf("config %s and %s (or the options clientId and clientSecret of %s): OAUTHBEARER needs both", OAuthClientID, OAuthClientSecret, SASLJAASConfig)
	}
	return t, nil
}

func (t *tokenSource) mechanism() sasl.Mechanism {
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, err := t.get(ctx)
		if err != nil {
			return oauth.Auth{}, err
		}
		return oauth.Auth{Token: tok, Extensions: t.extensions}, nil
	})
}

// get returns the token in hand, or a fresh one when it is due.
func (t *tokenSource) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && t.now().Before(t.refresh) {
		return t.token, nil
	}
	tok, life, err := t.fetch(ctx)
	if err != nil {
		return "", err
	}
	t.token = tok
	t.refresh = t.now().Add(time.Duration(float64(life) * refreshFactor))
	return tok, nil
}

// fetch asks the endpoint for a token and its lifetime.
func (t *tokenSource) fetch(ctx context.Context) (string, time.Duration, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if t.scope != "" {
		form.Set("scope", t.scope)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("oauth token endpoint %s: %w", t.endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 2.3.1: the client id and secret, form-encoded, as basic
	// auth.
	req.SetBasicAuth(url.QueryEscape(t.clientID), url.QueryEscape(t.clientSecret))
	resp, err := t.http.Do(req)
	if err != nil {
		return "", 0, &Error{Kind: Authentication, Cause: fmt.Sprintf("the OAuth token endpoint %s cannot be reached", t.endpoint), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", 0, fmt.Errorf("oauth token endpoint %s: %w", t.endpoint, err)
	}
	var r struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
		Error       string  `json:"error"`
	}
	_ = json.Unmarshal(body, &r)
	if resp.StatusCode != http.StatusOK || r.AccessToken == "" {
		// The error code, not the body: it could echo what was sent.
		cause := fmt.Sprintf("the OAuth token endpoint %s refused client %s: HTTP %d", t.endpoint, t.clientID, resp.StatusCode)
		if r.Error != "" && len(r.Error) < 64 {
			cause += " " + r.Error
		}
		return "", 0, &Error{Kind: Authentication, Cause: cause}
	}
	life := time.Duration(r.ExpiresIn * float64(time.Second))
	if life <= 0 {
		life = time.Hour
	}
	return r.AccessToken, life, nil
}
