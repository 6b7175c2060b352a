// Package work holds the populate-worker's River workers: one make per scheduled key, the
// feeder that enqueues those makes, the event-driven and periodic schedule, and the daily
// cleanup. They adapt River jobs to the populate engine; the decisions are the engine's.
package work
