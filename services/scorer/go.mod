module drover.dev/services/scorer

go 1.26.0
