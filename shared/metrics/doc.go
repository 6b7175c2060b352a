// Package metrics holds the Prometheus building blocks every Drover service shares: gauges read
// from Postgres at scrape time by one bounded statement each (QueryGauge), and the metrics of a
// service's River work (River): jobs by queue and state, the wait from available to started, run
// time and outcomes.
//
// Names follow Prometheus conventions: drover_ prefix, base units (seconds), _total on counters.
// No label ever carries a key, hotkey, job or batch id: label values come from small fixed sets
// (states, outcomes, queues, tables, targets, executor classes).
package metrics
