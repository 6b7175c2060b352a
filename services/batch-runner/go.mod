module drover.dev/services/batch-runner

go 1.26.0
