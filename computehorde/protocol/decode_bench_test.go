package protocol

import (
	"strings"
	"testing"
)

// BenchmarkDecodeLargeFrame decodes a frame just under DefaultMaxFrameSize and reports bytes
// allocated per frame byte; the decoder is meant to stay within a small multiple (under 10).
func BenchmarkDecodeLargeFrame(b *testing.B) {
	entry := `{"payload":{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","receipt_type":"JobStartedReceipt","executor_class":"c","is_organic":true,"ttl":5},"validator_signature":"0x","miner_signature":"0x"}`
	n := (DefaultMaxFrameSize - 200) / (len(entry) + 1)
	frame := []byte(`{"message_type":"V0DeclineJobRequest","job_uuid":"u","reason":"busy","receipts":[` + strings.Repeat(entry+",", n-1) + entry + `]}`)

	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := Decode(frame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeJobFinished decodes the hot phase's answer frame: a validator's readers decode
// one per executor in the same few milliseconds, so its cost is paid serially on few cores.
func BenchmarkDecodeJobFinished(b *testing.B) {
	frame, err := Encode(&V0JobFinishedRequest{JobUUID: "0f8fad5b-d9cb-469f-a165-70867728950e", DockerProcessStdout: "x"})
	if err != nil {
		b.Fatal(err)
	}
	d := Decoder{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.DecodeFromMiner(frame); err != nil {
			b.Fatal(err)
		}
	}
}
