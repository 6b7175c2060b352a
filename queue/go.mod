module drover.dev/queue

go 1.26.0
