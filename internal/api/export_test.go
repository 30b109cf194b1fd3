package api

// Routes returns the patterns the HTTP mux serves besides its catch-all.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.httpRoutes() {
		out = append(out, r.pattern)
	}
	return out
}
