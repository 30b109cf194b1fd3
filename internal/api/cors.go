package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/pifleet/sessionlog/internal/wire"
)

// CORS: a page on another origin (a browser app of the TypeScript client)
// may call /v1 when its origin is in Config.CORSOrigins. The API
// authenticates by a bearer token in a header, never by cookies, so a page
// can only use a token it was given: allowing an origin lets it send
// requests, not borrow anyone's credentials (no Allow-Credentials).

// corsExposed are the response headers a page may read: the freshness and
// node of every reply (fetch hides all but a few by default).
var corsExposed = strings.Join([]string{hdrApplied, hdrLag, hdrStale, hdrNode, wire.HeaderServedBy, "WWW-Authenticate"}, ", ")

// corsMaxAge is how long (seconds) a browser may cache a preflight.
const corsMaxAge = "600"

// CheckCORSOrigins validates the allowed origins: "*" alone, or origins
// scheme://host[:port] without a path (what a browser sends in Origin).
func CheckCORSOrigins(origins []string) error {
	for _, o := range origins {
		if o == "*" {
			if len(origins) > 1 {
				return errors.New(`CORS origins: "*" allows every origin; give it alone`)
			}
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			return fmt.Errorf("CORS origin %q: must be scheme://host[:port], as a browser sends it in Origin (e.g. https://console.example.com)", o)
		}
	}
	return nil
}

// cors answers preflights and marks the replies of /v1 for allowed
// origins; other requests pass through untouched.
func (s *Server) cors(next http.Handler) http.Handler {
	all := slices.Contains(s.cfg.CORSOrigins, "*")
	allowed := map[string]bool{}
	for _, o := range s.cfg.CORSOrigins {
		// Browsers send scheme and host in lower case.
		allowed[strings.ToLower(o)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		if !all {
			// The reply depends on Origin (with or without one): a cache
			// must not serve one origin's reply to another.
			h.Add("Vary", "Origin")
		}
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if !all && !allowed[origin] {
			if preflight {
				s.setNode(h)
				s.writeError(w, "cors", wire.Field("Origin", fmt.Errorf("%w: origin %s is not one of pi-node's --http-cors-origins", wire.ErrForbidden, origin)))
				return
			}
			next.ServeHTTP(w, r) // the browser withholds the reply from the page
			return
		}
		if all {
			h.Set("Access-Control-Allow-Origin", "*")
		} else {
			h.Set("Access-Control-Allow-Origin", origin)
		}
		if !preflight {
			h.Set("Access-Control-Expose-Headers", corsExposed)
			next.ServeHTTP(w, r)
			return
		}
		// A preflight carries no token: it reveals only what any page may
		// learn from the spec.
		s.setNode(h)
		h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID")
		h.Set("Access-Control-Max-Age", corsMaxAge)
		w.WriteHeader(http.StatusNoContent)
	})
}
