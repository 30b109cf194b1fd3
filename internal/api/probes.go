package api

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/pifleet/sessionlog/internal/wire"
)

// ProbeHandler serves only the probes: /metrics, /healthz and /readyz, for
// a listener of their own (pi-node's --metrics-listen); any other path is
// a 404 in the API's error shape. Like on Handler, they need no token.
func (s *Server) ProbeHandler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.probeRoutes(true) {
		mux.Handle(r.pattern, r.h)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, "unknown", fmt.Errorf("no route %s %s on the metrics listener (it serves /metrics, /healthz and /readyz): %w", r.Method, r.URL.Path, wire.ErrNotFound))
	})
	return mux
}

// ProbeServer returns an http.Server for ProbeHandler, with short timeouts:
// nothing it serves reads a body or streams.
func (s *Server) ProbeServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s.ProbeHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}
