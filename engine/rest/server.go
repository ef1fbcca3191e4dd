package rest

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/inspect"
)

// Backend is the engine as the API sees it. Every method is called from
// the server's goroutines and must be safe for concurrent use.
type Backend interface {
	// Watermarks is the document of GET /watermarks, or an *Unavailable
	// error for a 503.
	Watermarks() (inspect.Watermarks, error)
	Info() inspect.Info
	// Topology is the description as text and as a JSON document.
	Topology() (text string, doc any)
	// Live and Ready say whether the engine is alive and ready to serve
	// traffic, with its state.
	Live() inspect.Health
	Ready() inspect.Health
	// Pause and Resume stop and restart processing and return the new
	// control state.
	Pause(reason string) inspect.Control
	Resume(reason string) inspect.Control
}

// Unavailable is a Backend's answer for a document it cannot give yet: a
// 503 with Code.
type Unavailable struct{ Code, Message string }

func (u *Unavailable) Error() string { return u.Code + ": " + u.Message }

// Options configure a Server.
type Options struct {
	// Addr is host:port to listen on; port 0 picks a free one.
	Addr string
	// Token, when set, is the bearer token POST requests must carry. It
	// is required when Addr is not loopback.
	Token string
	// Metrics serves GET /metrics; nil answers 404.
	Metrics http.Handler
	// Logger logs where the API listens and failed requests (nil: none).
	Logger *slog.Logger
}

// ErrTokenRequired is returned by New for an address that is not loopback
// with no token.
var ErrTokenRequired = errors.New("a bearer token is required when the REST API listens beyond loopback")

// Server is the REST API of one engine.
type Server struct {
	b    Backend
	o    Options
	mux  *http.ServeMux
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// maxBody bounds a POST body.
const maxBody = 4 << 10

// New checks o and returns a server for b; Start listens.
func New(b Backend, o Options) (*Server, error) {
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("rest: address %q: %w", o.Addr, err)
	}
	if !Loopback(host) && o.Token == "" {
		return nil, fmt.Errorf("rest: %s: %w (set a token, or listen on 127.0.0.1)", o.Addr, ErrTokenRequired)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{b: b, o: o, mux: http.NewServeMux(), done: make(chan struct{})}
	s.routes()
	return s, nil
}

// Loopback says host is a loopback address or localhost.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the API's handler, for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens on Options.Addr and serves in the background. An address
// in use fails here, naming it.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", s.o.Addr)
	if err != nil {
		return fmt.Errorf("rest: listen on %s: %w", s.o.Addr, err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: s.mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.o.Logger.Error("REST API stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return nil
}

// Addr is the address the server listens on, "" before Start.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the server, waiting up to ctx for requests in flight.
func (s *Server) Close(ctx context.Context) error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return err
}

// Paths are the API's endpoints, as docs/rest-api.yaml lists them.
var Paths = []string{"/watermarks", "/info", "/topology", "/health/liveness", "/health/readiness", "/metrics", "/pause", "/resume"}

// Codes are the error codes the server sends.
var Codes = []string{inspect.CodeNotInitialised, inspect.CodeNoEventTime, inspect.CodeUnauthorized, inspect.CodeNotFound,
	inspect.CodeBadRequest, inspect.CodeMethod, inspect.CodeInternal}

func (s *Server) routes() {
	s.mux.HandleFunc("/watermarks", s.get(s.watermarks))
	s.mux.HandleFunc("/info", s.get(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.b.Info()) }))
	s.mux.HandleFunc("/topology", s.get(s.topology))
	s.mux.HandleFunc("/health/liveness", s.get(func(w http.ResponseWriter, _ *http.Request) { health(w, s.b.Live()) }))
	s.mux.HandleFunc("/health/readiness", s.get(func(w http.ResponseWriter, _ *http.Request) { health(w, s.b.Ready()) }))
	s.mux.HandleFunc("/metrics", s.get(s.metrics))
	s.mux.HandleFunc("/pause", s.post(s.b.Pause))
	s.mux.HandleFunc("/resume", s.post(s.b.Resume))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, inspect.CodeNotFound, fmt.Sprintf("no endpoint %s; see docs/rest-api.yaml", r.URL.Path))
	})
}

func (s *Server) get(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, inspect.CodeMethod, fmt.Sprintf("%s %s: use GET", r.Method, r.URL.Path))
			return
		}
		h(w, r)
	}
}

func (s *Server) post(act func(reason string) inspect.Control) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeError(w, http.StatusMethodNotAllowed, inspect.CodeMethod, fmt.Sprintf("%s %s: use POST", r.Method, r.URL.Path))
			return
		}
		if err := Authorize(s.o.Token, r.Header.Get("Authorization")); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stoatctl"`)
			writeError(w, http.StatusUnauthorized, inspect.CodeUnauthorized, err.Error())
			return
		}
		req, err := DecodeControl(r.Header.Get("Content-Type"), io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, inspect.CodeBadRequest, fmt.Sprintf("POST %s: %v", r.URL.Path, err))
			return
		}
		c := act(req.Reason)
		s.o.Logger.Info("REST "+strings.TrimPrefix(r.URL.Path, "/"), "paused", c.Paused, "reason", req.Reason, "from", r.RemoteAddr)
		writeJSON(w, http.StatusOK, c)
	}
}

// Authorize checks an Authorization header against token; an empty token
// lets every request through.
func Authorize(token, header string) error {
	if token == "" {
		return nil
	}
	scheme, got, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return errors.New("missing bearer token: send Authorization: Bearer TOKEN")
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(token)) != 1 {
		return errors.New("wrong bearer token")
	}
	return nil
}

// DecodeControl reads the optional body of POST /pause and /resume: empty,
// or a JSON inspect.ControlRequest with no unknown field.
func DecodeControl(contentType string, body io.Reader) (inspect.ControlRequest, error) {
	var req inspect.ControlRequest
	b, err := io.ReadAll(body)
	if err != nil {
		return req, fmt.Errorf("reading the body: %w", err)
	}
	if len(b) > maxBody {
		return req, fmt.Errorf("body over %d bytes", maxBody)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return req, nil
	}
	if ct, _, _ := strings.Cut(contentType, ";"); ct != "" && !strings.EqualFold(strings.TrimSpace(ct), "application/json") {
		return req, fmt.Errorf("content type %q: want application/json", ct)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("malformed JSON body: %w", err)
	}
	if dec.More() {
		return req, errors.New("malformed JSON body: more than one value")
	}
	if len(req.Reason) > 256 {
		return req, errors.New("reason over 256 characters")
	}
	return req, nil
}

func (s *Server) watermarks(w http.ResponseWriter, _ *http.Request) {
	doc, err := s.b.Watermarks()
	var u *Unavailable
	switch {
	case errors.As(err, &u):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, u.Code, u.Message)
	case err != nil:
		writeError(w, http.StatusInternalServerError, inspect.CodeInternal, err.Error())
	default:
		writeJSON(w, http.StatusOK, doc)
	}
}

// WantsJSON says a GET /topology asks for JSON: ?format=json, or an
// Accept header preferring application/json.
func WantsJSON(r *http.Request) bool {
	switch strings.ToLower(r.URL.Query().Get("format")) {
	case "json":
		return true
	case "text":
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "application/json":
			return true
		case "text/plain":
			return false
		}
	}
	return false
}

func (s *Server) topology(w http.ResponseWriter, r *http.Request) {
	if f := r.URL.Query().Get("format"); f != "" && f != "json" && f != "text" {
		writeError(w, http.StatusBadRequest, inspect.CodeBadRequest, fmt.Sprintf("format %q: want text or json", f))
		return
	}
	text, doc := s.b.Topology()
	if WantsJSON(r) {
		writeJSON(w, http.StatusOK, doc)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, text)
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.o.Metrics == nil {
		writeError(w, http.StatusNotFound, inspect.CodeNotFound, "metrics are not exported by this engine")
		return
	}
	s.o.Metrics.ServeHTTP(w, r)
}

func health(w http.ResponseWriter, h inspect.Health) {
	code := http.StatusOK
	if h.Status != inspect.StatusUp {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, h)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeError(w, http.StatusInternalServerError, inspect.CodeInternal, "encoding the answer: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, errCode, msg string) {
	b, _ := json.Marshal(inspect.Error{Code: errCode, Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}
