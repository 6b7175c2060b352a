// Package api is scorer's HTTP adapter: a batch's scores and the latest weights to set on chain.
package api
