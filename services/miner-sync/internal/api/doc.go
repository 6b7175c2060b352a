// Package api is miner-sync's HTTP adapter: the miners list, sync on demand and sync events.
package api
