package faultproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Proxy forwards TCP connections to the address each one names, with the
// faults currently set. The zero value is not usable; call Start.
type Proxy struct {
	ln net.Listener

	mu        sync.Mutex
	conns     map[*pair]struct{}
	delay     time.Duration
	blackhole bool
	refuse    bool
	closed    bool
	wg        sync.WaitGroup
}

// pair is one proxied connection: the client's side and the broker's.
type pair struct{ client, server net.Conn }

func (p *pair) close() {
	p.client.Close()
	if p.server != nil {
		p.server.Close()
	}
}

// Start listens on a free loopback port.
func Start() (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, conns: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Dial connects to addr through the proxy. Its signature is franz-go's
// kgo.Dialer.
func (p *Proxy) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.Addr())
	if err != nil {
		return nil, err
	}
	if _, err := io.WriteString(c, addr+"\n"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Cut closes every open connection, both ends, as a network that resets
// them would.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.close()
		delete(p.conns, c)
	}
}

// SetDelay holds every chunk of bytes, each way, for d before passing it
// on; 0 passes bytes at once.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// SetBlackhole, while on, accepts connections and swallows what is sent on
// them, new and open alike, answering nothing: a broker that hangs.
func (p *Proxy) SetBlackhole(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackhole = on
}

// SetRefuse, while on, closes every new connection at once.
func (p *Proxy) SetRefuse(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = on
}

// Heal clears every fault; open connections stay open.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay, p.blackhole, p.refuse = 0, false, false
}

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) faults() (delay time.Duration, blackhole, refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay, p.blackhole, p.refuse
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	if _, _, refuse := p.faults(); refuse {
		c.Close()
		return
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		c.Close()
		return
	}
	target := strings.TrimSpace(line)
	pr := &pair{client: c}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.Close()
		return
	}
	p.conns[pr] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pr)
		p.mu.Unlock()
		pr.close()
	}()
	// While black-holed, a new connection is held open and nothing is
	// dialled: the client sees a broker that accepted it and says nothing.
	if !p.waitOutBlackhole() {
		return
	}
	s, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	p.mu.Lock()
	pr.server = s
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { p.pipe(s, br); done <- struct{}{} }()
	go func() { p.pipe(c, s); done <- struct{}{} }()
	<-done
}

// pipe copies from src to dst chunk by chunk, applying the faults as they
// are when each chunk arrives.
func (p *Proxy) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if delay, _, _ := p.faults(); delay > 0 {
				time.Sleep(delay)
			}
			// Bytes are held, not dropped, while black-holed, as TCP
			// would retransmit them once the path is back.
			if !p.waitOutBlackhole() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitOutBlackhole returns once no black hole is set: true, or false when
// the proxy closed meanwhile.
func (p *Proxy) waitOutBlackhole() bool {
	for {
		p.mu.Lock()
		bh, closed := p.blackhole, p.closed
		p.mu.Unlock()
		switch {
		case closed:
			return false
		case !bh:
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}
