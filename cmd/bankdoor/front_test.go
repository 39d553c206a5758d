package main_test

import (
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
)

// front is a loopback address that the test holds for its whole life and
// forwards to a server that may come and go. While there is no server
// behind it, it closes every connection at once, as a ledger that is down
// would refuse it. A process can so be given the address before the server
// starts, and keep it across the server's restarts on other ports, without
// the test picking a free port, closing it and hoping nobody takes it.
type front struct {
	ln      net.Listener
	wg      sync.WaitGroup
	mu      sync.Mutex
	backend string                // host:port, "" while down
	conns   map[net.Conn]struct{} // open connections to the backend
}

func newFront(t *testing.T) *front {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &front{ln: ln, conns: map[net.Conn]struct{}{}}
	f.wg.Go(f.accept)
	t.Cleanup(func() {
		ln.Close()
		f.down()
		f.wg.Wait()
	})
	return f
}

// url is the front's address as an http URL.
func (f *front) url() string { return "http://" + f.ln.Addr().String() }

// up forwards new connections to the server at serverURL (its host and
// port) and closes those to the server before it.
func (f *front) up(t *testing.T, serverURL string) {
	t.Helper()
	u, err := url.Parse(serverURL)
	if err != nil || u.Host == "" {
		t.Fatalf("server URL %q: %v", serverURL, err)
	}
	f.set(u.Host)
}

// down closes the open connections and every new one, until up.
func (f *front) down() { f.set("") }

func (f *front) set(backend string) {
	f.mu.Lock()
	f.backend = backend
	conns := f.conns
	f.conns = map[net.Conn]struct{}{}
	f.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

func (f *front) accept() {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		backend := f.backend
		if backend != "" {
			f.conns[c] = struct{}{}
		}
		f.mu.Unlock()
		if backend == "" {
			c.Close()
			continue
		}
		f.wg.Go(func() { f.pipe(c, backend) })
	}
}

// pipe copies between c and a new connection to backend until either
// side ends, then closes both.
func (f *front) pipe(c net.Conn, backend string) {
	defer func() {
		c.Close()
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
	}()
	b, err := net.Dial("tcp", backend)
	if err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(b, c); done <- struct{}{} }()
	go func() { io.Copy(c, b); done <- struct{}{} }()
	<-done
	c.Close()
	b.Close()
	<-done
}
