package protocol

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"drover.dev/computehorde/receipts"
)

// TestEncodeDefaults encodes messages with only their required fields set and expects what
// upstream's pydantic models give for the same (model_dump_json of a model built from the
// required fields alone), so Go zero values stand for upstream's defaults.
func TestEncodeDefaults(t *testing.T) {
	t.Parallel()

	const request = `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i",` +
		`"raw_script":null,"docker_run_options_preset":"none","docker_run_cmd":[],"env":{},"volume":null,"output_upload":`
	job := func(upload OutputUpload) V0JobRequest {
		return V0JobRequest{JobUUID: "u", ExecutorClass: "c", DockerImage: "i", DockerRunOptionsPreset: PresetNone, OutputUpload: upload}
	}
	header := receipts.Header{JobUUID: "u", MinerHotkey: "m", ValidatorHotkey: "v", Timestamp: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}

	tests := []struct {
		name string
		msg  Message
		want string
	}{
		{name: "GenericError", msg: GenericError{}, want: `{"message_type":"GenericError","details":null}`},
		{
			name: "Decline", msg: V0DeclineJobRequest{JobUUID: "u"},
			want: `{"message_type":"V0DeclineJobRequest","job_uuid":"u","message":"","reason":"unknown","receipts":[],"context":null}`,
		},
		{
			name: "JobFailed", msg: V0JobFailedRequest{JobUUID: "u"},
			want: `{"message_type":"V0JobFailedRequest","job_uuid":"u","message":"","reason":"unknown","stage":"unknown",` +
				`"docker_process_exit_status":null,"docker_process_stdout":null,"docker_process_stderr":null,"context":null}`,
		},
		{
			name: "HordeFailedZeroEnums", msg: V0HordeFailedRequest{JobUUID: "u", Message: "m"},
			want: `{"message_type":"V0HordeFailedRequest","job_uuid":"u","reported_by":"unknown","message":"m","reason":"unknown","context":null}`,
		},
		{
			name: "MachineSpecsNil", msg: V0MachineSpecsRequest{JobUUID: "u"},
			want: `{"message_type":"V0MachineSpecsRequest","job_uuid":"u","specs":{"specs":{}}}`,
		},
		{name: "JobRequest", msg: job(nil), want: request + `null,"artifacts_dir":null}`},
		{
			name: "ZipPostFormFieldsNull", msg: job(ZipAndHTTPPostUpload{URL: "x"}),
			want: request + `{"output_upload_type":"zip_and_http_post","url":"x","form_fields":null},"artifacts_dir":null}`,
		},
		{
			name: "ZipPostFormFieldsSet", msg: job(ZipAndHTTPPostUpload{URL: "x", FormFields: StringMap{"b": "2", "a": "1"}}),
			want: request + `{"output_upload_type":"zip_and_http_post","url":"x","form_fields":{"a":"1","b":"2"}},"artifacts_dir":null}`,
		},
		{
			name: "MultiUpload", msg: job(MultiUpload{Uploads: []OutputUpload{SingleFilePostUpload{URL: "x", RelativePath: "p"}}}),
			want: request + `{"output_upload_type":"multi_upload","uploads":[{"output_upload_type":"single_file_post","url":"x",` +
				`"form_fields":null,"relative_path":"p","signed_headers":null}],"system_output":null},"artifacts_dir":null}`,
		},
		{
			name: "FinishedReceipt", msg: V0JobFinishedReceiptRequest{Payload: receipts.JobFinished{Header: header, TimeStarted: header.Timestamp, ScoreStr: "1"}, Signature: "s"},
			want: `{"message_type":"V0JobFinishedReceiptRequest","payload":{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v",` +
				`"timestamp":"2025-03-01T12:00:00Z","receipt_type":"JobFinishedReceipt","time_started":"2025-03-01T12:00:00Z",` +
				`"time_took_us":0,"score_str":"1","block_numbers":[]},"signature":"s"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			frame, err := Encode(tt.msg)
			require.NoError(t, err)
			require.Equal(t, tt.want, string(frame))
			_, err = Decode(frame)
			require.NoError(t, err)
		})
	}
}
