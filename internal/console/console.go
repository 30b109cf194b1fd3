package console

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/console/"

// csp allows the page this origin's scripts, styles and API calls and
// nothing else: no inline script, no eval, no frame around it (the token
// it holds must not be clickjacked out of it).
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Handler serves the console's files under Prefix (index.html at Prefix
// itself) and redirects /console to it.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix(Prefix, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" {
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// A new pi-node may bring new files: the browser fetches them
		// again each time (they are small, and embedded files carry no
		// modification time to answer 304 with).
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
