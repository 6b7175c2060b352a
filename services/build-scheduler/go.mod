module drover.dev/services/build-scheduler

go 1.26.0
