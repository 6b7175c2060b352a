// Package hotkey holds a Bittensor hotkey: an sr25519 keypair (schnorrkel, signing context
// "substrate"), its SS58 address, and the ways a validator gets one — a wallet hotkey file, a hex
// seed, a mnemonic or a development URI such as "//Alice".
//
// Signatures travel as "0x" followed by 128 lowercase hex digits, which is what ComputeHorde
// miners and validators exchange on the wire.
package hotkey
