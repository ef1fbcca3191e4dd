package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// DefaultURL is where `stoatctl run` serves its API unless told otherwise.
const DefaultURL = "http://127.0.0.1:8080"

// ErrUnreachable is wrapped by every error that means no answer came back
// (refused, timed out, reset): the engine is not running there, or the
// network is in the way. Callers exit differently for it.
var ErrUnreachable = errors.New("engine unreachable")

// APIError is an answer with a non-2xx status.
type APIError struct {
	Status int
	Path   string
	Body   Error
}

func (e *APIError) Error() string {
	return fmt.Sprintf("GET %s: %d %s: %s", e.Path, e.Status, e.Body.Code, e.Body.Message)
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
	url := strings.TrimRight(c.BaseURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	req.Header.Set("Accept", accept)
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
		return nil, fmt.Errorf("GET %s: %w: %w", url, ErrUnreachable, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer: %w: %w", url, ErrUnreachable, err)
	}
	if resp.StatusCode/100 != 2 {
		ae := &APIError{Status: resp.StatusCode, Path: path}
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
