package schemaregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hamba/avro/v2"
)

// Confluent's error codes.
const (
	CodeSubjectNotFound = 40401
	CodeVersionNotFound = 40402
	CodeSchemaNotFound  = 40403
	CodeInvalidSchema   = 42201
	CodeUnauthorized    = 401
	// CodeIncompatible answers, with HTTP 409, a schema the subject's
	// compatibility level refuses.
	CodeIncompatible = 409
)

// IncompatibleError is a schema the subject's compatibility level refuses
// (HTTP 409 over the API).
type IncompatibleError struct {
	Subject, Level string
	// Version is the registered version it is incompatible with.
	Version int
	Err     error
}

func (e *IncompatibleError) Error() string {
	return fmt.Sprintf("schema being registered is incompatible with an earlier schema for subject %q (version %d, compatibility %s): %v", e.Subject, e.Version, e.Level, e.Err)
}

func (e *IncompatibleError) Unwrap() error { return e.Err }

const contentType = "application/vnd.schemaregistry.v1+json"

// Server is the registry; it is an http.Handler. The zero value is not
// usable: make one with New.
type Server struct {
	user, password string

	mu       sync.Mutex
	byID     []string          // id-1 -> the schema as first registered
	ids      map[string]int    // canonical form -> id
	subjects map[string][]int  // subject -> ids by version-1
	deleted  map[string]bool   // subjects deleted (soft)
	compat   map[string]string // "" is the global level
}

// Option configures a Server.
type Option func(*Server)

// WithBasicAuth makes every request carry these credentials.
func WithBasicAuth(user, password string) Option {
	return func(s *Server) { s.user, s.password = user, password }
}

// New returns an empty registry.
func New(opts ...Option) *Server {
	s := &Server{ids: map[string]int{}, subjects: map[string][]int{}, deleted: map[string]bool{}, compat: map[string]string{"": "BACKWARD"}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Register registers schema under subject, as POST
// /subjects/{subject}/versions does, and returns its id. A schema new to
// the subject must be compatible with the subject's earlier versions
// under its compatibility level (the subject's, else the global one,
// BACKWARD by default, as Confluent's): otherwise the error is an
// *IncompatibleError and nothing is registered.
func (s *Server) Register(subject, schema string) (int, error) {
	canon, err := canonical(schema)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.ids[canon]; !ok || s.deleted[subject] || !slices.Contains(s.subjects[subject], id) {
		if err := s.checkCompatible(subject, schema); err != nil {
			return 0, err
		}
	}
	id, ok := s.ids[canon]
	if !ok {
		s.byID = append(s.byID, schema)
		id = len(s.byID)
		s.ids[canon] = id
	}
	if s.deleted[subject] {
		delete(s.deleted, subject)
		s.subjects[subject] = nil
	}
	if !slices.Contains(s.subjects[subject], id) {
		s.subjects[subject] = append(s.subjects[subject], id)
	}
	return id, nil
}

// checkCompatible checks schema against subject's versions as its level
// says (under s.mu): BACKWARD, the new schema reads what the latest wrote;
// FORWARD, the latest reads what the new one writes; FULL, both; the
// _TRANSITIVE levels against every version, not only the latest; NONE
// not at all. hamba/avro's SchemaCompatibility judges, by Avro's schema
// resolution rules, as Confluent's AvroSchema.isBackwardCompatible does.
func (s *Server) checkCompatible(subject, schema string) error {
	level, ok := s.compat[subject]
	if !ok {
		level = s.compat[""]
	}
	ids := s.subjects[subject]
	if level == "NONE" || s.deleted[subject] || len(ids) == 0 {
		return nil
	}
	from := len(ids) - 1
	if strings.HasSuffix(level, "_TRANSITIVE") {
		from = 0
	}
	next, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return err
	}
	compat := avro.NewSchemaCompatibility()
	for v := len(ids); v > from; v-- {
		old, err := avro.ParseWithCache(s.byID[ids[v-1]-1], "", &avro.SchemaCache{})
		if err != nil {
			return fmt.Errorf("subject %s version %d: %w", subject, v, err)
		}
		if strings.HasPrefix(level, "BACKWARD") || strings.HasPrefix(level, "FULL") {
			if err := compat.Compatible(next, old); err != nil {
				return &IncompatibleError{Subject: subject, Level: level, Version: v, Err: fmt.Errorf("the new schema cannot read what version %d wrote: %w", v, err)}
			}
		}
		if strings.HasPrefix(level, "FORWARD") || strings.HasPrefix(level, "FULL") {
			if err := compat.Compatible(old, next); err != nil {
				return &IncompatibleError{Subject: subject, Level: level, Version: v, Err: fmt.Errorf("version %d cannot read what the new schema writes: %w", v, err)}
			}
		}
	}
	return nil
}

func canonical(schema string) (string, error) {
	// A private cache: the global one is keyed by full name, and two
	// versions of a record share one.
	sch, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		return "", err
	}
	return sch.String(), nil
}

type apiError struct {
	status int
	Code   int    `json:"error_code"`
	Msg    string `json:"message"`
}

func fail(status, code int, format string, args ...any) *apiError {
	return &apiError{status: status, Code: code, Msg: fmt.Sprintf(format, args...)}
}

type schemaRequest struct {
	Schema     string            `json:"schema"`
	SchemaType string            `json:"schemaType,omitempty"`
	References []json.RawMessage `json:"references,omitempty"`
}

type registered struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	out, err := s.serve(r)
	w.Header().Set("Content-Type", contentType)
	if err != nil {
		if err.status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Basic realm="schema-registry"`)
		}
		w.WriteHeader(err.status)
		_ = json.NewEncoder(w).Encode(err)
		return
	}
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) serve(r *http.Request) (any, *apiError) {
	if s.user != "" || s.password != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != s.user || p != s.password {
			return nil, fail(http.StatusUnauthorized, CodeUnauthorized, "Unauthorized")
		}
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	m := r.Method
	switch {
	case len(parts) == 3 && parts[0] == "schemas" && parts[1] == "ids" && m == http.MethodGet:
		return s.schemaByID(parts[2])
	case len(parts) == 4 && parts[0] == "schemas" && parts[1] == "ids" && parts[3] == "versions" && m == http.MethodGet:
		return s.idVersions(parts[2])
	case len(parts) == 1 && parts[0] == "subjects" && m == http.MethodGet:
		return s.listSubjects(), nil
	case len(parts) == 2 && parts[0] == "subjects" && m == http.MethodPost:
		return s.lookup(parts[1], r)
	case len(parts) == 2 && parts[0] == "subjects" && m == http.MethodDelete:
		return s.deleteSubject(parts[1])
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions" && m == http.MethodGet:
		return s.versions(parts[1])
	case len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions" && m == http.MethodPost:
		return s.register(parts[1], r)
	case (len(parts) == 4 || len(parts) == 5 && parts[4] == "schema") && parts[0] == "subjects" && parts[2] == "versions" && m == http.MethodGet:
		reg, err := s.version(parts[1], parts[3])
		if err != nil || len(parts) == 4 {
			return reg, err
		}
		// .../schema answers the schema itself, not wrapped.
		return json.RawMessage(reg.Schema), nil
	case len(parts) <= 2 && parts[0] == "config":
		return s.config(parts[1:], r)
	}
	return nil, fail(http.StatusNotFound, 404, "HTTP 404 Not Found")
}

func (s *Server) schemaByID(raw string) (any, *apiError) {
	id, err := strconv.Atoi(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || id < 1 || id > len(s.byID) {
		return nil, fail(http.StatusNotFound, CodeSchemaNotFound, "Schema %s not found", raw)
	}
	return map[string]string{"schema": s.byID[id-1]}, nil
}

func (s *Server) idVersions(raw string) (any, *apiError) {
	id, err := strconv.Atoi(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || id < 1 || id > len(s.byID) {
		return nil, fail(http.StatusNotFound, CodeSchemaNotFound, "Schema %s not found", raw)
	}
	type sv struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []sv{}
	for _, subj := range s.liveSubjects() {
		if v := slices.Index(s.subjects[subj], id); v >= 0 {
			out = append(out, sv{subj, v + 1})
		}
	}
	return out, nil
}

// liveSubjects are the subjects not deleted, sorted (under s.mu).
func (s *Server) liveSubjects() []string {
	out := []string{}
	for subj := range s.subjects {
		if !s.deleted[subj] {
			out = append(out, subj)
		}
	}
	slices.Sort(out)
	return out
}

func (s *Server) listSubjects() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.liveSubjects()
}

func readSchema(r *http.Request) (schemaRequest, *apiError) {
	var req schemaRequest
	if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20)).Decode(&req); err != nil {
		return req, fail(http.StatusUnprocessableEntity, 422, "Unrecognized field or malformed request: %v", err)
	}
	if req.SchemaType != "" && req.SchemaType != "AVRO" {
		return req, fail(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: only AVRO is supported here, not %s", req.SchemaType)
	}
	if len(req.References) > 0 {
		return req, fail(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: references are not supported here")
	}
	return req, nil
}

func (s *Server) register(subject string, r *http.Request) (any, *apiError) {
	req, aerr := readSchema(r)
	if aerr != nil {
		return nil, aerr
	}
	id, err := s.Register(subject, req.Schema)
	var incompatible *IncompatibleError
	if errors.As(err, &incompatible) {
		// Confluent's answer: 409, error_code 409.
		return nil, fail(http.StatusConflict, CodeIncompatible, "%s", strings.ToUpper(incompatible.Error()[:1])+incompatible.Error()[1:])
	}
	if err != nil {
		return nil, fail(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: %v", err)
	}
	return map[string]int{"id": id}, nil
}

func (s *Server) lookup(subject string, r *http.Request) (any, *apiError) {
	req, aerr := readSchema(r)
	if aerr != nil {
		return nil, aerr
	}
	canon, err := canonical(req.Schema)
	if err != nil {
		return nil, fail(http.StatusUnprocessableEntity, CodeInvalidSchema, "Invalid schema: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	versions, ok := s.subjects[subject]
	if !ok || s.deleted[subject] {
		return nil, fail(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	id, ok := s.ids[canon]
	v := slices.Index(versions, id)
	if !ok || v < 0 {
		return nil, fail(http.StatusNotFound, CodeSchemaNotFound, "Schema not found")
	}
	return registered{Subject: subject, Version: v + 1, ID: id, Schema: s.byID[id-1]}, nil
}

func (s *Server) versions(subject string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.subjects[subject]
	if !ok || s.deleted[subject] {
		return nil, fail(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	out := make([]int, len(ids))
	for i := range ids {
		out[i] = i + 1
	}
	return out, nil
}

func (s *Server) version(subject, raw string) (registered, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.subjects[subject]
	if !ok || s.deleted[subject] {
		return registered{}, fail(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	v := len(ids)
	if raw != "latest" && raw != "-1" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > len(ids) {
			return registered{}, fail(http.StatusNotFound, CodeVersionNotFound, "Version %s not found.", raw)
		}
		v = n
	}
	id := ids[v-1]
	return registered{Subject: subject, Version: v, ID: id, Schema: s.byID[id-1]}, nil
}

func (s *Server) deleteSubject(subject string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.subjects[subject]
	if !ok || s.deleted[subject] {
		return nil, fail(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", subject)
	}
	s.deleted[subject] = true
	out := make([]int, len(ids))
	for i := range ids {
		out[i] = i + 1
	}
	return out, nil
}

var levels = []string{"NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"}

// config keeps compatibility levels, which Register enforces.
func (s *Server) config(rest []string, r *http.Request) (any, *apiError) {
	subject := ""
	if len(rest) == 1 {
		subject = rest[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		lvl, ok := s.compat[subject]
		if !ok {
			return nil, fail(http.StatusNotFound, CodeSubjectNotFound, "Subject '%s' not found.", subject)
		}
		return map[string]string{"compatibilityLevel": lvl}, nil
	case http.MethodPut:
		var req struct {
			Compatibility string `json:"compatibility"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16)).Decode(&req); err != nil || !slices.Contains(levels, req.Compatibility) {
			return nil, fail(http.StatusUnprocessableEntity, 42203, "Invalid compatibility level")
		}
		s.compat[subject] = req.Compatibility
		return map[string]string{"compatibility": req.Compatibility}, nil
	}
	return nil, fail(http.StatusMethodNotAllowed, 405, "HTTP 405 Method Not Allowed")
}
