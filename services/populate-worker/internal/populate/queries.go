package populate

import "drover.dev/services/populate-worker/internal/store"

// queries runs the statements of package store.
var queries = store.Queries
