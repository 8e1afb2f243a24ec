package faults

import (
	"bytes"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// proxy is a TCP proxy on 127.0.0.1 in front of a database server, to
// break the network between a store and its server: pause all traffic (a
// network that stops answering), or cut a connection when the server's
// answer to a DELETE comes back, without passing it on: the server ran
// and committed the statement, and the client cannot know.
type proxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   map[net.Conn]bool
	paused  chan struct{} // non-nil while paused; closed to resume
	every   int           // cut every every-th answer to a DELETE; 0: never
	limit   int64         // at most this many cuts
	answers int
	severed atomic.Int64
	// holdDelete: the next answer to a DELETE pauses all traffic, and is
	// never passed on: its connection is cut at resume.
	holdDelete bool
	// tagged: only an answer that names DELETE itself is held
	// (PostgreSQL's "DELETE n" command tag): the client's DELETE may be a
	// prepare, whose answer is not the delete's.
	tagged bool
	held   chan struct{} // closed once an answer is held
	// cutQuery: a client's write holding it is not passed on and its
	// connection is cut, at most cutQueries more times.
	cutQuery   []byte
	cutQueries int
}

// newProxy listens on a free port of 127.0.0.1 and forwards to target
// (host:port) until the test ends.
func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, target: target, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); p.serve(c) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.resume()
		p.mu.Lock()
		for c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// via returns dsn with its host and port replaced by the proxy's.
func (p *proxy) via(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		p.t.Fatal(err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

func (p *proxy) serve(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.mu.Lock()
	p.conns[client], p.conns[server] = true, true
	p.mu.Unlock()
	cut := func() {
		client.Close()
		server.Close()
		p.mu.Lock()
		delete(p.conns, client)
		delete(p.conns, server)
		p.mu.Unlock()
	}
	defer cut()
	// deleting: the client's last write was a DELETE in text (MySQL's
	// COM_QUERY); PostgreSQL's answer names it itself ("DELETE n").
	var deleting atomic.Bool
	done := make(chan struct{}, 2)
	go func() {
		p.copy(server, client, func(b []byte) bool {
			deleting.Store(bytes.Contains(b, []byte("DELETE ")))
			return p.cutQueryNow(b)
		})
		done <- struct{}{}
	}()
	go func() {
		p.copy(client, server, func(b []byte) bool {
			named := bytes.Contains(b, []byte("DELETE "))
			if !(deleting.Load() || named) {
				return false
			}
			if p.holdNow(named) {
				p.waitResumed()
				return true
			}
			return p.cutNow()
		})
		done <- struct{}{}
	}()
	<-done
}

// copy forwards from src to dst, waiting while paused; a chunk for which
// drop is true is not passed on, and ends the connection.
func (p *proxy) copy(dst, src net.Conn, drop func([]byte) bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitResumed()
			if drop(buf[:n]) {
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

func (p *proxy) cutNow() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.every == 0 || p.severed.Load() >= p.limit {
		return false
	}
	p.answers++
	if p.answers%p.every != 0 {
		return false
	}
	p.severed.Add(1)
	return true
}

// cutQueryNow reports whether the client's write b is one to cut (see
// cutQueriesHolding).
func (p *proxy) cutQueryNow(b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutQueries == 0 || !bytes.Contains(b, p.cutQuery) {
		return false
	}
	p.cutQueries--
	return true
}

// cutQueriesHolding makes the proxy cut the connection of the next n
// statements the client sends that hold s, instead of passing them on: a
// connection killed as the statement starts (the server never sees it).
func (p *proxy) cutQueriesHolding(s string, n int) {
	p.mu.Lock()
	p.cutQuery, p.cutQueries = []byte(s), n
	p.mu.Unlock()
}

// holdNow pauses the proxy if it is to hold the next answer to a DELETE.
func (p *proxy) holdNow(named bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holdDelete || (p.tagged && !named) {
		return false
	}
	p.holdDelete = false
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
	close(p.held)
	return true
}

// pauseAtDelete makes the proxy pause all traffic when the server answers
// a DELETE it ran, and never pass that answer on (the connection is cut
// at resume): a network that stops answering mid-delete. The channel is
// closed once it has paused.
func (p *proxy) pauseAtDelete(tagged bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holdDelete, p.tagged, p.held = true, tagged, make(chan struct{})
	return p.held
}

// cutDeletes makes the proxy cut the connection of every n-th answer to a
// DELETE, instead of passing the answer on, at most limit times.
func (p *proxy) cutDeletes(n int, limit int64) {
	p.mu.Lock()
	p.every, p.limit, p.answers = n, limit, 0
	p.mu.Unlock()
}

// pause holds all traffic, both ways, until resume.
func (p *proxy) pause() {
	p.mu.Lock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
	p.mu.Unlock()
}

func (p *proxy) resume() {
	p.mu.Lock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
	p.mu.Unlock()
}

func (p *proxy) waitResumed() {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
