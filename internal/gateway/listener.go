package gateway

import (
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// LimitListener wraps l so that each peer address holds at most
// Budgets.Connections open connections; one over is answered 429 and closed.
// It counts by address, before any request is read, so it holds in both
// identification modes.
func (g *Gateway) LimitListener(l net.Listener) net.Listener {
	return &limitListener{Listener: l, max: g.cfg.Budgets.Connections, open: map[netip.Addr]int{}}
}

type limitListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[netip.Addr]int
}

// tooManyConnections is the whole answer to a connection over the budget.
var tooManyConnections = func() string {
	body := "paddock gateway: over the concurrent connection budget\n"
	return "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nConnection: close\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}()

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := peerAddr(c)
		l.mu.Lock()
		over := l.open[addr] >= l.max
		if !over {
			l.open[addr]++
		}
		l.mu.Unlock()
		if over {
			go refuseConn(c)
			continue
		}
		return &countedConn{Conn: c, release: func() { l.release(addr) }}, nil
	}
}

func (l *limitListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

func refuseConn(c net.Conn) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write([]byte(tooManyConnections))
	c.Close()
}

func peerAddr(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// countedConn gives its slot back once, when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
