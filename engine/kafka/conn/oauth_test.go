package conn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stoatflow/stoatctl/engine/config"
)

// TestTokenSource: OAUTHBEARER's tokens come from the endpoint with the
// client credentials grant (id and secret as basic auth, the scope), are
// kept until 80% of their life has passed and then fetched again; a
// refusal is an authentication failure naming the endpoint and the
// client, not the secret.
func TestTokenSource(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost || r.Form.Get("grant_type") != "client_credentials" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if !ok || id != "stoat" || secret != "s3cret-xyz" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client","error_description":"secret s3cret-wrong is wrong"}`)
			return
		}
		n := calls.Add(1)
		fmt.Fprintf(w, `{"access_token":"token-%d-%s","expires_in":100,"token_type":"Bearer"}`, n, r.Form.Get("scope"))
	}))
	defer srv.Close()

	jaas := `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="stoat" clientSecret="s3cret-xyz" scope="kafka" extension_logicalCluster="lkc-1";`
	j, err := ParseJAAS(jaas)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.New(map[string]string{OAuthTokenEndpoint: srv.URL + "/token"})
	src, err := newTokenSource(cfg, j.Options)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	src.now = func() time.Time { return now }
	ctx := context.Background()
	get := func() string {
		tok, err := src.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if tok := get(); tok != "token-1-kafka" {
		t.Fatalf("first token %q", tok)
	}
	now = now.Add(79 * time.Second)
	if tok := get(); tok != "token-1-kafka" {
		t.Errorf("token at 79%% of its life %q, want the first kept", tok)
	}
	now = now.Add(2 * time.Second)
	if tok := get(); tok != "token-2-kafka" {
		t.Errorf("token at 81%% of its life %q, want a fresh one", tok)
	}
	if src.extensions["logicalCluster"] != "lkc-1" {
		t.Errorf("extensions %v", src.extensions)
	}

	bad, err := newTokenSource(config.New(map[string]string{OAuthTokenEndpoint: srv.URL, OAuthClientID: "stoat", OAuthClientSecret: "s3cret-wrong"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.get(ctx)
	if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "refused client stoat: HTTP 401 invalid_client") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the secret: %v", err)
	}
}
