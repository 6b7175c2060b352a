module drover.dev/services/populate-worker

go 1.26.0
