package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// BenchmarkScheduler runs the same measurement as the command, once, so `make bench` (go test
// -bench . -benchtime 1x work, with DATABASE_URL set) prints the floor, the scheduler and readiness-query
// figures and the ratio. It is skipped without DATABASE_URL.
func BenchmarkScheduler(b *testing.B) {
	server := os.Getenv("DATABASE_URL")
	if server == "" {
		b.Skip("DATABASE_URL is not set")
	}
	for b.Loop() {
		if err := run(context.Background(), server, 8, 5, 5*time.Second, nil, os.Stdout); err != nil {
			b.Fatal(err)
		}
	}
}
