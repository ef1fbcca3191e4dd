// Package rest serves a running engine's REST API: GET /watermarks,
// /info, /topology, /health/liveness, /health/readiness and /metrics,
// and POST /pause and /resume. The documents are the inspect package's
// types, so the server and `stoatctl inspect` share one definition;
// docs/rest-api.yaml is the OpenAPI description.
//
// Terms:
//   - A Backend is what the server reads and drives: the engine implements
//     it (engine/api.go). The server holds no engine state of its own.
//   - Loopback: an address on 127.0.0.0/8 or ::1 (or "localhost"). The API
//     listens there unless told otherwise; on any other address a bearer
//     token is required, and it guards the mutating endpoints (POST). GET
//     endpoints stay open so that Prometheus can scrape without one.
//   - Every error is a JSON inspect.Error with a stable code
//     (inspect.CodeNotFound, ...), whatever the path or method.
package rest
