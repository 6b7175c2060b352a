package web

import (
	"encoding/json"
	"net/http"
	"sync/atomic"

	"drover.dev/shared/problem"
)

// gate stands in front of the routes while the service is starting: it answers /healthz (the
// process is alive) and /readyz (503 with what it waits for) itself, and 503 to everything else,
// so a service waiting for its database serves its probes instead of exiting. Routes are added
// while it holds; they are only reached once it opens.
type gate struct {
	open    atomic.Bool
	waiting atomic.Pointer[func() map[string]string]
	next    http.Handler
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.open.Load() {
		g.next.ServeHTTP(w, r)
		return
	}
	status := map[string]string{}
	if f := g.waiting.Load(); f != nil {
		status = (*f)()
	}
	switch r.URL.Path {
	case "/healthz":
		writeJSON(w, "application/json", http.StatusOK, map[string]string{"status": "ok"})
	case "/readyz":
		writeJSON(w, "application/json", http.StatusServiceUnavailable, status)
	default:
		code := problem.Unavailable
		writeJSON(w, "application/problem+json", http.StatusServiceUnavailable, Problem{
			Type: problemTypeBase + string(code), Title: http.StatusText(http.StatusServiceUnavailable),
			Status: http.StatusServiceUnavailable, Detail: "the service is starting: see /readyz for what it waits for",
			Instance: r.URL.Path,
		})
	}
}

func writeJSON(w http.ResponseWriter, contentType string, status int, body any) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// Hold makes the server answer only /healthz (200) and /readyz (503, with waiting's report of
// each dependency) until Open; every other path is a 503. Call it before Serve.
func (s *Server) Hold(waiting func() map[string]string) {
	s.gate.waiting.Store(&waiting)
	s.gate.open.Store(false)
}

// Open ends Hold: from now on the routes answer. Routes must all be added before it.
func (s *Server) Open() { s.gate.open.Store(true) }
