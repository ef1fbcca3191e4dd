package inspect

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClientDecodesAndTypesErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/watermarks":
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				w.WriteHeader(http.StatusUnauthorized)
				w.Write([]byte(`{"code":"unauthorized","message":"wrong token"}`))
				return
			}
			w.Write([]byte(`{"globalMs":-9223372036854775808,"globalIso":"N/A","alignmentGroupMins":{},"alignmentBinding":null,"partitions":{"in:0":{"watermarkMs":5,"idle":true,"idlenessTimeoutMs":120000}}}`))
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte("plain text"))
		}
	}))
	defer srv.Close()
	c := NewClient(srv.URL)
	c.Token = "s3cret"
	w, err := c.Watermarks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w.GlobalMs != MinWatermark || w.Partitions["in:0"].IdlenessTimeoutMs != 120000 || !w.Partitions["in:0"].Idle {
		t.Fatalf("decoded %+v", w)
	}
	c.Token = "wrong"
	_, err = c.Watermarks(context.Background())
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Body.Code != CodeUnauthorized {
		t.Fatalf("err = %v, want a 401 APIError with code %q", err, CodeUnauthorized)
	}
	_, err = c.Info(context.Background())
	if !errors.As(err, &ae) || ae.Status != 503 || ae.Body.Message != "plain text" {
		t.Fatalf("err = %v, want a 503 APIError keeping the body", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = NewClient("http://" + addr).Info(context.Background())
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
}

func TestIso(t *testing.T) {
	if Iso(MinWatermark) != NotAvailable {
		t.Fatal("MinWatermark must read N/A")
	}
	if got := Iso(1790071560000); got != "2026-09-22T10:06:00Z" {
		t.Fatalf("Iso = %s", got)
	}
}
