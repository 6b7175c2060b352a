module drover.dev/shared

go 1.26.0
