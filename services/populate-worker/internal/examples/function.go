package examples

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"drover.dev/services/populate-worker/internal/populate"
)

// EnergyFunction is the HTTP function of example_signal_energy, written as any external function
// would be: it receives {"table", "key"}, reads what it needs and answers {"rows": [...]} or
// {"error": {"class", "message", "stack"}}.
func EnergyFunction(pool *pgxpool.Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req populate.FunctionRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
			answer(w, http.StatusBadRequest, populate.FunctionResponse{Error: &populate.MakeError{Class: "BadRequest", Message: err.Error()}})
			return
		}
		id, err := req.Key.Int64("signal_id")
		if err != nil {
			answer(w, http.StatusBadRequest, populate.FunctionResponse{Error: &populate.MakeError{Class: "BadRequest", Message: err.Error()}})
			return
		}
		var samples []float64
		if err := pool.QueryRow(r.Context(), `SELECT samples FROM example_signal WHERE signal_id = $1`, id).Scan(&samples); err != nil {
			answer(w, http.StatusInternalServerError, populate.FunctionResponse{Error: &populate.MakeError{Class: "LookupError", Message: err.Error()}})
			return
		}
		if len(samples) == 0 {
			answer(w, http.StatusUnprocessableEntity, populate.FunctionResponse{Error: &populate.MakeError{
				Class: "ValueError", Message: fmt.Sprintf("signal %d has no samples", id), Stack: "energy(signal_id)\n  samples = []"}})
			return
		}
		energy := 0.0
		for _, s := range samples {
			energy += s * s
		}
		answer(w, http.StatusOK, populate.FunctionResponse{Rows: []populate.Row{{"signal_id": id, "energy": energy}}})
	})
}

func answer(w http.ResponseWriter, status int, body populate.FunctionResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
