package loopback

import (
	"net"
	"net/http"
	"sync"
)

// unused holds the connections a client dialled and has not sent a
// request on yet. The SDK's transport dials spares under concurrency, and
// http.Server.Shutdown waits 5 s for such a connection before it calls
// it idle; closing them when the server shuts down loses nothing (no
// request is on them) and lets Close return once the requests in flight
// have.
type unused struct {
	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

// track is the server's ConnState hook.
func (u *unused) track(c net.Conn, st http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if st == http.StateNew {
		if u.conns == nil {
			u.conns = map[net.Conn]struct{}{}
		}
		u.conns[c] = struct{}{}
		return
	}
	delete(u.conns, c)
}

// close closes them; the server calls it on Shutdown, once its listener
// is closed.
func (u *unused) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	for c := range u.conns {
		_ = c.Close()
	}
	clear(u.conns)
}

// closeOnShutdown sets srv to track its unused connections and close
// them on Shutdown.
func (u *unused) closeOnShutdown(srv *http.Server) {
	srv.ConnState = u.track
	srv.RegisterOnShutdown(u.close)
}
