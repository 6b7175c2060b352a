module drover.dev/devrun

go 1.26.0
