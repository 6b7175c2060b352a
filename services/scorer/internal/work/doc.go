// Package work holds scorer's River workers: one per job kind it consumes.
package work
