module drover.dev/migrations

go 1.26.0
