package server

import (
	"net/http"
	"strings"
)

// noRoute answers a request that no route takes: 405, with the methods the
// path has routes for in Allow, when it has some, else 404.
func (h *handler) noRoute(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := h.mux.Handler(probe); pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, "ErrMethodNotAllowed", "method "+r.Method+" not allowed on "+r.URL.Path+": use "+strings.Join(allowed, " or "))
		return
	}
	writeError(w, http.StatusNotFound, "ErrNoRoute", "no such route: "+r.Method+" "+r.URL.Path)
}
