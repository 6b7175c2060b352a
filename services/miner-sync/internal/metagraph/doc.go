// Package metagraph reads the subnet's metagraph from a pluggable Source and checks every entry.
// A source answers the JSON the simulated fleet serves:
//
//	{"netuid": 12, "block": 4242, "miners": [{"uid": 0, "hotkey": "5F…", "coldkey": "5G…",
//	  "ip": "203.0.113.7", "port": 8000, "stake": 1234.5, "validator": false}]}
//
// over HTTP (HTTPSource) or from a file (FileSource). A subtensor adapter would be a third
// Source; it is not implemented. Every source is bounded in size, and the HTTP one in time.
package metagraph
