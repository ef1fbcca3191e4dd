package faultproxy

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves a line echo on loopback and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, within time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(within))
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

func TestFaults(t *testing.T) {
	target := echo(t)
	p, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	c, err := p.Dial(ctx, "tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := roundTrip(c, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("through the proxy: %q, %v", got, err)
	}

	p.Cut()
	if _, err := roundTrip(c, 2*time.Second); err == nil {
		t.Fatal("a cut connection still answered")
	}

	p.SetDelay(300 * time.Millisecond)
	c, _ = p.Dial(ctx, "tcp", target)
	start := time.Now()
	if _, err := roundTrip(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("round trip took %v under a 300ms delay each way", d)
	}
	p.Heal()

	p.SetBlackhole(true)
	if _, err := roundTrip(c, 300*time.Millisecond); err == nil {
		t.Fatal("an open connection answered inside a black hole")
	}
	nc, err := p.Dial(ctx, "tcp", target)
	if err != nil {
		t.Fatalf("a black hole must accept connections: %v", err)
	}
	if _, err := roundTrip(nc, 300*time.Millisecond); err == nil {
		t.Fatal("a new connection answered inside a black hole")
	}
	p.Heal()
	nc, _ = p.Dial(ctx, "tcp", target)
	if got, err := roundTrip(nc, 2*time.Second); err != nil || got != "ping\n" {
		t.Fatalf("after healing: %q, %v", got, err)
	}

	p.SetRefuse(true)
	rc, err := p.Dial(ctx, "tcp", target)
	if err == nil {
		if _, err := roundTrip(rc, 2*time.Second); err == nil {
			t.Fatal("a refused connection answered")
		}
	}
}
