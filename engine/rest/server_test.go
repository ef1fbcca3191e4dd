package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stoatflow/stoatctl/engine/rest"
	"github.com/stoatflow/stoatctl/inspect"
)

// backend is a Backend over fixed documents: the HTTP layer's tests need
// no engine (the engine's own tests serve a running one).
type backend struct {
	paused atomic.Bool
	ready  atomic.Bool
	wm     error
}

func (b *backend) Watermarks() (inspect.Watermarks, error) {
	if b.wm != nil {
		return inspect.Watermarks{}, b.wm
	}
	return inspect.Watermarks{GlobalMs: inspect.MinWatermark, GlobalIso: inspect.NotAvailable, AlignmentGroupMins: map[string]int64{},
		Partitions: map[string]inspect.PartitionWatermark{}}, nil
}
func (b *backend) Info() inspect.Info { return inspect.Info{ApplicationID: "app", State: "RUNNING"} }
func (b *backend) Topology() (string, any) {
	return "Topologies:\n", map[string]string{"applicationId": "app"}
}
func (b *backend) Live() inspect.Health {
	return inspect.Health{Status: inspect.StatusUp, State: "RUNNING"}
}
func (b *backend) Ready() inspect.Health {
	if b.ready.Load() {
		return inspect.Health{Status: inspect.StatusUp, State: "RUNNING"}
	}
	return inspect.Health{Status: inspect.StatusDown, State: "REBALANCING", Reason: "restoring"}
}
func (b *backend) Pause(string) inspect.Control {
	b.paused.Store(true)
	return inspect.Control{Paused: true, State: "RUNNING"}
}
func (b *backend) Resume(string) inspect.Control {
	b.paused.Store(false)
	return inspect.Control{State: "RUNNING"}
}

func TestRequests(t *testing.T) {
	b := &backend{}
	srv, err := rest.New(b, rest.Options{Addr: "127.0.0.1:0", Token: "s3cret",
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "m 1\n") })})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	url := "http://" + srv.Addr()
	for _, tc := range []struct {
		name, method, path, auth, ctype, body, accept string
		status                                        int
		code                                          string // the JSON error code, or "" for a success
		contains                                      string
	}{
		{name: "watermarks", method: "GET", path: "/watermarks", status: 200, contains: `"globalIso": "N/A"`},
		{name: "info", method: "GET", path: "/info", status: 200, contains: `"applicationId": "app"`},
		{name: "topology text", method: "GET", path: "/topology", status: 200, contains: "Topologies:"},
		{name: "topology json by accept", method: "GET", path: "/topology", accept: "application/json", status: 200, contains: `"applicationId"`},
		{name: "topology json by query", method: "GET", path: "/topology?format=json", status: 200, contains: `"applicationId"`},
		{name: "topology bad format", method: "GET", path: "/topology?format=yaml", status: 400, code: inspect.CodeBadRequest},
		{name: "liveness", method: "GET", path: "/health/liveness", status: 200, contains: `"status": "UP"`},
		{name: "readiness down", method: "GET", path: "/health/readiness", status: 503, contains: `"status": "DOWN"`},
		{name: "metrics", method: "GET", path: "/metrics", status: 200, contains: "m 1"},
		{name: "unknown path", method: "GET", path: "/nope", status: 404, code: inspect.CodeNotFound},
		{name: "post to a GET endpoint", method: "POST", path: "/info", status: 405, code: inspect.CodeMethod},
		{name: "get of pause", method: "GET", path: "/pause", status: 405, code: inspect.CodeMethod},
		{name: "pause without token", method: "POST", path: "/pause", status: 401, code: inspect.CodeUnauthorized},
		{name: "pause wrong token", method: "POST", path: "/pause", auth: "Bearer nope", status: 401, code: inspect.CodeUnauthorized},
		{name: "pause basic auth", method: "POST", path: "/pause", auth: "Basic czNjcmV0", status: 401, code: inspect.CodeUnauthorized},
		{name: "pause malformed body", method: "POST", path: "/pause", auth: "Bearer s3cret", ctype: "application/json", body: `{"reason":`, status: 400, code: inspect.CodeBadRequest},
		{name: "pause unknown field", method: "POST", path: "/pause", auth: "Bearer s3cret", ctype: "application/json", body: `{"force":true}`, status: 400, code: inspect.CodeBadRequest},
		{name: "pause wrong content type", method: "POST", path: "/pause", auth: "Bearer s3cret", ctype: "text/plain", body: `x`, status: 400, code: inspect.CodeBadRequest},
		{name: "pause", method: "POST", path: "/pause", auth: "Bearer s3cret", ctype: "application/json", body: `{"reason":"deploy"}`, status: 200, contains: `"paused": true`},
		{name: "resume without body", method: "POST", path: "/resume", auth: "Bearer s3cret", status: 200, contains: `"paused": false`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.accept != "" {
				req.Header.Set("Accept", tc.accept)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.code != "" {
				var e inspect.Error
				if err := json.Unmarshal(body, &e); err != nil || e.Code != tc.code || e.Message == "" {
					t.Fatalf("body %s, want a JSON error with code %q", body, tc.code)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("content type %q", ct)
				}
			}
			if !strings.Contains(string(body), tc.contains) {
				t.Fatalf("body %s lacks %q", body, tc.contains)
			}
		})
	}
	if b.paused.Load() {
		t.Error("resume did not reach the backend")
	}
}

func TestWatermarksUnavailable(t *testing.T) {
	b := &backend{wm: &rest.Unavailable{Code: inspect.CodeNotInitialised, Message: "not yet"}}
	srv, _ := rest.New(b, rest.Options{Addr: "127.0.0.1:0"})
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/watermarks", nil))
	if rec.Code != 503 || !strings.Contains(rec.Body.String(), `"code":"not_initialised"`) || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestTokenRequiredBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:0", "", true}, {"[::1]:0", "", true}, {"localhost:0", "", true},
		{"0.0.0.0:8080", "", false}, {":8080", "", false}, {"10.1.2.3:80", "", false}, {"0.0.0.0:8080", "t", true},
	} {
		_, err := rest.New(&backend{}, rest.Options{Addr: tc.addr, Token: tc.token})
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, rest.ErrTokenRequired)) {
			t.Errorf("%s token %q: err = %v", tc.addr, tc.token, err)
		}
	}
	if _, err := rest.New(&backend{}, rest.Options{Addr: "nonsense"}); err == nil {
		t.Error("an address without a port was accepted")
	}
}

func TestAddressInUse(t *testing.T) {
	a, _ := rest.New(&backend{}, rest.Options{Addr: "127.0.0.1:0"})
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close(context.Background())
	b, _ := rest.New(&backend{}, rest.Options{Addr: a.Addr()})
	if err := b.Start(); err == nil || !strings.Contains(err.Error(), a.Addr()) {
		t.Fatalf("err = %v, want the address named", err)
	}
}

// FuzzRequest: whatever the method, path, headers and body, the server
// answers without panicking, and every non-2xx answer is a JSON error
// with a known code.
func FuzzRequest(f *testing.F) {
	f.Add("POST", "/pause", "Bearer s3cret", "application/json", `{"reason":"x"}`, "")
	f.Add("GET", "/topology?format=json", "", "", "", "application/json;q=0.9, text/plain")
	f.Add("POST", "/resume", "bearer  s3cret ", "application/json; charset=utf-8", `{"reason":"x"} {}`, "")
	f.Add("DELETE", "/watermarks", "Bearer", "", "\x00", "*/*")
	srv, err := rest.New(&backend{ready: atomic.Bool{}}, rest.Options{Addr: "127.0.0.1:0", Token: "s3cret"})
	if err != nil {
		f.Fatal(err)
	}
	h := srv.Handler()
	codes := map[string]bool{inspect.CodeNotFound: true, inspect.CodeBadRequest: true, inspect.CodeMethod: true, inspect.CodeUnauthorized: true,
		inspect.CodeNotInitialised: true, inspect.CodeInternal: true}
	f.Fuzz(func(t *testing.T, method, path, auth, ctype, body, accept string) {
		if method == "" || strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") || !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n#") {
			return
		}
		req, err := http.NewRequest(method, "http://x"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", ctype)
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code/100 == 2 || rec.Code == 503 && strings.HasPrefix(req.URL.Path, "/health/") {
			return
		}
		if rec.Code/100 == 3 {
			return // the mux cleaning a path (/a/../b) redirects
		}
		var e inspect.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !codes[e.Code] {
			t.Fatalf("%s %s: %d %q: not a documented JSON error", method, path, rec.Code, rec.Body)
		}
	})
}

func FuzzDecodeControl(f *testing.F) {
	f.Add("application/json", `{"reason":"deploy"}`)
	f.Add("", "")
	f.Add("application/json", `{"reason":1}`)
	f.Fuzz(func(t *testing.T, ctype, body string) {
		req, err := rest.DecodeControl(ctype, strings.NewReader(body))
		if err == nil && len(req.Reason) > 256 {
			t.Fatalf("accepted a reason of %d characters", len(req.Reason))
		}
	})
}
