package minersim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// routes lists every control endpoint. All are read-only JSON.
func (f *Fleet) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /metagraph", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, f.Metagraph()) })
	mux.HandleFunc("GET /miners", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, f.Miners()) })
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, f.Stats()) })
	mux.HandleFunc("GET /jobs", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, f.Jobs()) })
	mux.HandleFunc("GET /arrivals", f.handleArrivals)
	return mux
}

// handleArrivals serves the arrival records, filtered by the optional query parameters miner,
// message_type, job_uuid and since (unix nanoseconds).
func (f *Fleet) handleArrivals(w http.ResponseWriter, r *http.Request) {
	q := ArrivalFilter{MessageType: r.URL.Query().Get("message_type"), JobUUID: r.URL.Query().Get("job_uuid")}
	if s := r.URL.Query().Get("miner"); s != "" {
		miner, err := strconv.Atoi(s)
		if err != nil {
			http.Error(w, "miner must be an integer", http.StatusBadRequest)
			return
		}
		q.Miner = &miner
	}
	if s := r.URL.Query().Get("since"); s != "" {
		since, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			http.Error(w, "since must be unix nanoseconds", http.StatusBadRequest)
			return
		}
		q.SinceNano = since
	}
	writeJSON(w, f.ArrivalsWhere(q))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
