// Package protocol is the ComputeHorde validator ⇄ miner websocket protocol: every message in
// both directions, their exact JSON, a bounded decoder that reports what went wrong in a form a
// peer can answer with GenericError, the ValidatorAuthForMiner handshake and the executor class
// table.
//
// Encode writes what upstream's pydantic models write: compact JSON with message_type first and
// every field present, nulls and defaults included. Decode is strict about what upstream
// requires (a missing or null required field is an error) and lenient where upstream is:
// unknown fields are ignored and unknown enum values read as "unknown".
package protocol
