// Package metagraph reads the subnet's metagraph from a pluggable Source and checks every entry.
// HTTPSource and FileSource read the JSON the simulated fleet serves:
//
//	{"netuid": 12, "block": 4242, "miners": [{"uid": 0, "hotkey": "5F…", "coldkey": "5G…",
//	  "ip": "203.0.113.7", "port": 8000, "stake": 1234.5, "validator": false}]}
//
// PylonSource reads Pylon's neurons endpoint and SubtensorSource a subtensor node's JSON-RPC;
// both name the block's hash. Every source is
// bounded in size, and the HTTP ones in time; a neuron that does not decode is reported, not fatal.
package metagraph
