package inspect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/stoatflow/stoatctl/internal/output"
)

// DefaultURL is where `stoatctl run` serves its API unless told otherwise.
const DefaultURL = "http://127.0.0.1:8080"

// ErrUnreachable is wrapped by every error that means no answer came back
// (refused, timed out, reset): the engine is not running there, or the
// network is in the way. Callers exit differently for it.
var ErrUnreachable = fmt.Errorf("engine %w", output.ErrUnreachable)

// APIError is an answer with a non-2xx status.
type APIError struct {
	Status int
	// Method is GET unless it says otherwise.
	Method string
	Path   string
	Body   Error
}

func (e *APIError) Error() string {
	m := e.Method
	if m == "" {
		m = http.MethodGet
	}
	return fmt.Sprintf("%s %s: %d %s: %s", m, e.Path, e.Status, e.Body.Code, e.Body.Message)
}

// Client fetches the documents of one engine's REST API.
type Client struct {
	// BaseURL is the API's root, such as DefaultURL.
	BaseURL string
	// Token, when set, is sent as a bearer token.
	Token string
	// HTTP is the client used; nil means one with a 5 s timeout.
	HTTP *http.Client
}

// NewClient returns a client for the API at base.
func NewClient(base string) *Client { return &Client{BaseURL: base} }

// Watermarks fetches GET /watermarks.
func (c *Client) Watermarks(ctx context.Context) (Watermarks, error) {
	var w Watermarks
	err := c.getJSON(ctx, "/watermarks", &w)
	return w, err
}

// Info fetches GET /info.
func (c *Client) Info(ctx context.Context) (Info, error) {
	var i Info
	err := c.getJSON(ctx, "/info", &i)
	return i, err
}

// Metrics fetches GET /metrics in Prometheus' text format.
func (c *Client) Metrics(ctx context.Context) (string, error) {
	b, err := c.get(ctx, "/metrics", "text/plain")
	return string(b), err
}

// Topology fetches GET /topology as text ("text") or JSON ("json").
func (c *Client) Topology(ctx context.Context, format string) ([]byte, error) {
	accept := "text/plain"
	if format == "json" {
		accept = "application/json"
	}
	return c.get(ctx, "/topology", accept)
}

// Pause asks POST /pause, with an optional reason that the engine logs.
func (c *Client) Pause(ctx context.Context, reason string) (Control, error) {
	return c.control(ctx, "/pause", reason)
}

// Resume asks POST /resume.
func (c *Client) Resume(ctx context.Context, reason string) (Control, error) {
	return c.control(ctx, "/resume", reason)
}

func (c *Client) control(ctx context.Context, path, reason string) (Control, error) {
	var out Control
	var body io.Reader
	if reason != "" {
		b, _ := json.Marshal(ControlRequest{Reason: reason})
		body = bytes.NewReader(b)
	}
	b, err := c.do(ctx, http.MethodPost, path, "application/json", body)
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("POST %s: decoding the answer: %w", path, err)
	}
	return out, nil
}

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	b, err := c.get(ctx, path, "application/json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %w", path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, path, accept string) ([]byte, error) {
	return c.do(ctx, http.MethodGet, path, accept, nil)
}

func (c *Client) do(ctx context.Context, method, path, accept string, body io.Reader) ([]byte, error) {
	url := strings.TrimRight(c.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s %s: %w: %w", method, url, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w: %w", method, url, ErrUnreachable, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Status: resp.StatusCode, Method: method, Path: path}
		if json.Unmarshal(b, &ae.Body) != nil || ae.Body.Code == "" {
			ae.Body = Error{Code: http.StatusText(resp.StatusCode), Message: strings.TrimSpace(string(b))}
		}
		return nil, ae
	}
	return b, nil
}

// Iso is the readable form of an epoch-millisecond time: RFC 3339 in UTC,
// NotAvailable for MinWatermark.
func Iso(ms int64) string {
	if ms == MinWatermark {
		return NotAvailable
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
