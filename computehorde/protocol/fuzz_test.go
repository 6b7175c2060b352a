package protocol

import (
	"errors"
	"testing"
)

// FuzzDecode checks that any frame either decodes or fails with a *DecodeError, never panics,
// and that a decoded frame re-encodes to a frame that decodes to the same encoding.
func FuzzDecode(f *testing.F) {
	for _, frame := range goldenFrames(f) {
		f.Add(frame)
	}
	f.Add([]byte(`PING`))
	f.Add([]byte(`{"message_type":"V0JobFinishedRequest","JOB_UUID":"B","job_uuid":"A","Job_Uuid":"C","docker_process_stdout":"","docker_process_stderr":"","artifacts":{"K":"v"}}`))
	f.Add([]byte(`{"message_type":"V0DeclineJobRequest","job_uuid":"u","receipts":[{"payload":{"receipt_type":"JobAcceptedReceipt"}}]}`))

	decoder := Decoder{MaxFrameSize: 64 << 10}
	f.Fuzz(func(t *testing.T, frame []byte) {
		msg, err := decoder.Decode(frame)
		if err != nil {
			var decodeErr *DecodeError
			if !errors.As(err, &decodeErr) {
				t.Fatalf("error is not a *DecodeError: %v", err)
			}
			return
		}
		encoded, err := Encode(msg)
		if err != nil {
			t.Fatalf("encode decoded %s: %v", msg.MessageType(), err)
		}
		again, err := Decode(encoded)
		if err != nil {
			t.Fatalf("decode re-encoded %s: %v\n%s", msg.MessageType(), err, encoded)
		}
		reencoded, err := Encode(again)
		if err != nil {
			t.Fatalf("encode twice %s: %v", msg.MessageType(), err)
		}
		if string(reencoded) != string(encoded) {
			t.Fatalf("re-encoding is not stable:\n%s\n%s", encoded, reencoded)
		}
	})
}
