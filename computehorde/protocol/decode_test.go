package protocol

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecodeErrors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		frame       string
		kind        ErrorKind
		messageType string
		field       string
	}{
		{name: "Ping", frame: `PING`, kind: KindMalformedJSON},
		{name: "Empty", frame: ``, kind: KindMalformedJSON},
		{name: "Truncated", frame: `{"message_type":"V0AcceptJobRequest"`, kind: KindMalformedJSON},
		{name: "NotObject", frame: `["V0AcceptJobRequest"]`, kind: KindWrongType},
		{name: "NullFrame", frame: `null`, kind: KindWrongType},
		{name: "NoMessageType", frame: `{"job_uuid":"u"}`, kind: KindMissingField, field: "message_type"},
		{name: "MessageTypeNotString", frame: `{"message_type":7}`, kind: KindWrongType, field: "message_type"},
		{name: "UnknownMessageType", frame: `{"message_type":"V9Teleport"}`, kind: KindUnknownMessageType, messageType: "V9Teleport"},
		{name: "MissingJobUUID", frame: `{"message_type":"V0AcceptJobRequest"}`, kind: KindMissingField, messageType: "V0AcceptJobRequest", field: "job_uuid"},
		{name: "NullJobUUID", frame: `{"message_type":"V0AcceptJobRequest","job_uuid":null}`, kind: KindWrongType, messageType: "V0AcceptJobRequest", field: "job_uuid"},
		{name: "JobUUIDNumber", frame: `{"message_type":"V0AcceptJobRequest","job_uuid":5}`, kind: KindWrongType, messageType: "V0AcceptJobRequest", field: "job_uuid"},
		{name: "ReasonNumber", frame: `{"message_type":"V0DeclineJobRequest","job_uuid":"u","reason":3}`, kind: KindWrongType, messageType: "V0DeclineJobRequest", field: "reason"},
		{name: "PortFraction", frame: `{"message_type":"V0StreamingJobReadyRequest","job_uuid":"u","public_key":"k","port":1.5}`, kind: KindWrongType, messageType: "V0StreamingJobReadyRequest", field: "port"},
		{name: "ContextNotObject", frame: `{"message_type":"V0HordeFailedRequest","job_uuid":"u","reported_by":"miner","message":"m","reason":"unknown","context":[1]}`, kind: KindWrongType, messageType: "V0HordeFailedRequest", field: "context"},
		{name: "UnknownVolumeType", frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"none","docker_run_cmd":[],"volume":{"volume_type":"nfs"}}`, kind: KindInvalidValue, messageType: "V0JobRequest", field: "volume_type"},
		{name: "NestedMultiVolume", frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"none","docker_run_cmd":[],"volume":{"volume_type":"multi_volume","volumes":[{"volume_type":"multi_volume","volumes":[]}]}}`, kind: KindInvalidValue, messageType: "V0JobRequest", field: "volume_type"},
		{name: "VolumeMissingContents", frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"none","docker_run_cmd":[],"volume":{"volume_type":"inline"}}`, kind: KindMissingField, messageType: "V0JobRequest", field: "contents"},
		{name: "UnknownPreset", frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"privileged","docker_run_cmd":[]}`, kind: KindInvalidValue, messageType: "V0JobRequest", field: "docker_run_options_preset"},
		{name: "MultiUploadOfZip", frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"none","docker_run_cmd":[],"output_upload":{"output_upload_type":"multi_upload","uploads":[{"output_upload_type":"zip_and_http_put","url":"x"}]}}`, kind: KindInvalidValue, messageType: "V0JobRequest", field: "output_upload_type"},
		{name: "BadReceiptTimestamp", frame: `{"message_type":"V0JobAcceptedReceiptRequest","payload":{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"noon","time_accepted":"2025-03-01T12:00:00Z","ttl":360},"signature":"0x"}`, kind: KindInvalidValue, messageType: "V0JobAcceptedReceiptRequest", field: "timestamp"},
		{name: "ManifestCountString", frame: `{"message_type":"V0ExecutorManifestRequest","manifest":{"always_on.test":"3"}}`, kind: KindWrongType, messageType: "V0ExecutorManifestRequest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			msg, err := Decode([]byte(tt.frame))
			require.Nil(t, msg)
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr)
			require.Equal(t, tt.kind, decodeErr.Kind, "%v", err)
			require.Equal(t, tt.messageType, decodeErr.MessageType)
			if tt.field != "" {
				require.Equal(t, tt.field, decodeErr.Field)
			}
			reply := decodeErr.GenericErrorReply()
			require.True(t, strings.HasPrefix(*reply.Details, "Malformed message: "))
		})
	}
}

func TestDecodeFrameLimit(t *testing.T) {
	t.Parallel()

	frame := []byte(`{"message_type":"V0AcceptJobRequest","job_uuid":"` + strings.Repeat("a", 100) + `"}`)

	_, err := Decoder{MaxFrameSize: len(frame)}.Decode(frame)
	require.NoError(t, err)

	_, err = Decoder{MaxFrameSize: len(frame) - 1}.Decode(frame)
	var decodeErr *DecodeError
	require.ErrorAs(t, err, &decodeErr)
	require.Equal(t, KindFrameTooLarge, decodeErr.Kind)

	huge := make([]byte, DefaultMaxFrameSize+1) // not even JSON: the size check comes first
	_, err = Decode(huge)
	require.ErrorAs(t, err, &decodeErr)
	require.Equal(t, KindFrameTooLarge, decodeErr.Kind)
}

func TestDecodeBySender(t *testing.T) {
	t.Parallel()

	accept := []byte(`{"message_type":"V0AcceptJobRequest","job_uuid":"u"}`)
	_, err := DecodeFromValidator(accept)
	var decodeErr *DecodeError
	require.ErrorAs(t, err, &decodeErr)
	require.Equal(t, KindUnknownMessageType, decodeErr.Kind)
	require.Equal(t, "V0AcceptJobRequest", decodeErr.MessageType)

	msg, err := Decoder{MaxFrameSize: 64}.DecodeFromMiner(accept)
	require.NoError(t, err)
	require.Equal(t, &V0AcceptJobRequest{JobUUID: "u"}, msg)
}

func TestDecodeDefaults(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		frame string
		want  Message
		wire  string
	}{
		{
			name:  "DeclineBare",
			frame: `{"message_type":"V0DeclineJobRequest","job_uuid":"u"}`,
			want:  &V0DeclineJobRequest{JobUUID: "u", Reason: RejectionUnknown},
			wire:  `{"message_type":"V0DeclineJobRequest","job_uuid":"u","message":"","reason":"unknown","receipts":[],"context":null}`,
		},
		{
			name:  "DeclineUnknownReason",
			frame: `{"message_type":"V0DeclineJobRequest","job_uuid":"u","reason":"on_holiday","extra":1}`,
			want:  &V0DeclineJobRequest{JobUUID: "u", Reason: RejectionUnknown},
		},
		{
			name:  "JobFailedAliases",
			frame: `{"message_type":"V0JobFailedRequest","job_uuid":"u","error_detail":"oops","error_type":"timeout"}`,
			want:  &V0JobFailedRequest{JobUUID: "u", Message: "oops", Reason: FailureTimeout, Stage: StageUnknown},
			wire:  `{"message_type":"V0JobFailedRequest","job_uuid":"u","message":"oops","reason":"timeout","stage":"unknown","docker_process_exit_status":null,"docker_process_stdout":null,"docker_process_stderr":null,"context":null}`,
		},
		{
			name:  "JobFailedNamesBeatAliases",
			frame: `{"message_type":"V0JobFailedRequest","job_uuid":"u","message":"m","error_detail":"d","reason":"upload_failed","error_type":"timeout","stage":"teleport"}`,
			want:  &V0JobFailedRequest{JobUUID: "u", Message: "m", Reason: FailureUploadFailed, Stage: StageUnknown},
		},
		{
			name:  "HordeFailedUnknownEnums",
			frame: `{"message_type":"V0HordeFailedRequest","job_uuid":"u","reported_by":"alien","message":"m","reason":"mystery"}`,
			want:  &V0HordeFailedRequest{JobUUID: "u", ReportedBy: ParticipantUnknown, Message: "m", Reason: HordeUnknown},
		},
		{
			name:  "EnvKeysKeepCase",
			frame: `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"c","docker_image":"i","docker_run_options_preset":"none","docker_run_cmd":[],"env":{"A":"1","a":"2"}}`,
			want:  &V0JobRequest{JobUUID: "u", ExecutorClass: "c", DockerImage: "i", DockerRunOptionsPreset: PresetNone, DockerRunCmd: List[string]{}, Env: StringMap{"A": "1", "a": "2"}},
		},
		{
			name:  "UnauthorizedUnknownCodeKept",
			frame: `{"message_type":"UnauthorizedError","code":"SUBNET_PAUSED"}`,
			want:  &UnauthorizedError{Code: "SUBNET_PAUSED"},
			wire:  `{"message_type":"UnauthorizedError","code":"SUBNET_PAUSED","details":null}`,
		},
		{
			name:  "HuggingfacePatternString",
			frame: `{"message_type":"V0InitialJobRequest","job_uuid":"u","executor_class":"c","volume":{"volume_type":"huggingface_volume","repo_id":"r","allow_patterns":"*.json"},"job_started_receipt_payload":{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","executor_class":"c","is_organic":false,"ttl":5},"job_started_receipt_signature":"0x"}`,
			wire:  `{"message_type":"V0InitialJobRequest","job_uuid":"u","executor_class":"c","docker_image":null,"timeout_seconds":null,"volume":{"volume_type":"huggingface_volume","repo_id":"r","repo_type":null,"revision":null,"relative_path":null,"allow_patterns":["*.json"],"token":null},"job_started_receipt_payload":{"job_uuid":"u","miner_hotkey":"m","validator_hotkey":"v","timestamp":"2025-03-01T12:00:00Z","receipt_type":"JobStartedReceipt","executor_class":"c","is_organic":false,"ttl":5},"job_started_receipt_signature":"0x","streaming_details":null,"executor_timing":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			msg, err := Decode([]byte(tt.frame))
			require.NoError(t, err)
			if tt.want != nil {
				require.Equal(t, tt.want, msg)
			}
			if tt.wire != "" {
				encoded, err := Encode(msg)
				require.NoError(t, err)
				require.Equal(t, tt.wire, string(encoded))
			}
		})
	}
}

func TestEncodeZeroValues(t *testing.T) {
	t.Parallel()

	encoded, err := Encode(V0JobRequest{JobUUID: "u", DockerRunOptionsPreset: PresetNvidiaAll})
	require.NoError(t, err)
	require.Equal(t, `{"message_type":"V0JobRequest","job_uuid":"u","executor_class":"","docker_image":"","raw_script":null,"docker_run_options_preset":"nvidia_all","docker_run_cmd":[],"env":{},"volume":null,"output_upload":null,"artifacts_dir":null}`, string(encoded)) //nolint:testifylint // the exact wire bytes are the point
}

func TestErrorKindString(t *testing.T) {
	t.Parallel()

	require.Equal(t, "frame_too_large", KindFrameTooLarge.String())
	require.Equal(t, "error_kind_99", ErrorKind(99).String())
}

// TestEncodeValueAndPointerAlike guards against marshalers on pointer receivers, which
// encoding/json skips for values that are not addressable.
func TestEncodeValueAndPointerAlike(t *testing.T) {
	t.Parallel()

	for path, frame := range goldenFrames(t) {
		msg, err := Decode(frame)
		require.NoError(t, err)
		value := reflect.ValueOf(msg).Elem().Interface().(Message)
		encoded, err := Encode(value)
		require.NoError(t, err)
		require.Equal(t, string(frame), string(encoded), path)
	}
}

// TestDecodeMatchesKeysExactly checks that a member binds only to the field whose name equals
// its key, as pydantic binds, at every depth: encoding/json alone also binds keys that differ in
// case ("JOB_UUID", or "docker_proceſs_stdout" with a long s) and lets the last of them win, so
// a miner could show us a job_uuid upstream would not see. Upstream ignores unknown keys, so
// each frame must decode as the golden frame it was edited from; a required field given only
// in the wrong case is missing.
func TestDecodeMatchesKeysExactly(t *testing.T) {
	t.Parallel()

	const (
		finished      = "constructed/V0JobFinishedRequest.json"
		failed        = "constructed/V0JobFailedRequest.json"
		initial       = "reference/V0InitialJobRequest.json"
		streaming     = "constructed/V0InitialJobRequest_streaming.json"
		volumes       = "constructed/V0JobRequest_volumes.json"
		zipPost       = "constructed/V0JobRequest_zip_post.json"
		decline       = "reference/V0DeclineJobRequest.json"
		receipt       = "constructed/V0JobFinishedReceiptRequest.json"
		specs         = "constructed/V0MachineSpecsRequest.json"
		auth          = "reference/ValidatorAuthForMiner.json"
		exactJobUUID  = `"job_uuid":"7b9e…"`
		exactContents = `"contents":"UEsDBBQAAAAI..."`
	)
	tests := []struct {
		name     string
		golden   string
		old, new string
		missing  string // the field reported missing; "" when the frame decodes as the golden one
	}{
		{name: "VariantAfterExact", golden: finished, old: exactJobUUID, new: exactJobUUID + `,"JOB_UUID":"evil"`},
		{name: "VariantBeforeExact", golden: finished, old: exactJobUUID, new: `"Job_Uuid":"evil",` + exactJobUUID},
		{name: "VariantsAround", golden: finished, old: exactJobUUID, new: `"JOB_UUID":"a",` + exactJobUUID + `,"job_UUID":"b"`},
		{name: "UnicodeFold", golden: finished, old: `"docker_process_stderr":""`, new: `"docker_process_stderr":"","docker_proceſs_stderr":"evil"`},
		{name: "EscapedVariant", golden: finished, old: exactJobUUID, new: exactJobUUID + `,"JOB\u005fUUID":"evil"`},
		{name: "EscapedExact", golden: finished, old: exactJobUUID, new: `"JOB_UUID":"evil","job\u005fuuid":"7b9e…"`},
		{name: "OptionalVariantAlone", golden: finished, old: `"artifacts":null`, new: `"artifacts":null,"Artifacts":{"a":"evil"}`},
		{name: "DiscriminatorVariant", golden: finished, old: exactJobUUID, new: exactJobUUID + `,"Message_Type":"V0JobFailedRequest"`},
		{name: "RequiredVariantOnly", golden: finished, old: exactJobUUID, new: `"JOB_UUID":"7b9e…"`, missing: "job_uuid"},
		{name: "AuthSignature", golden: auth, old: `"signature":"0xabab…"`, new: `"signature":"0xabab…","SIGNATURE":"0xevil"`},
		{name: "AliasVariant", golden: failed, old: `"message":"exit 1"`, new: `"error_detail":"exit 1","ERROR_DETAIL":"evil"`},
		{name: "AliasedNameVariant", golden: failed, old: `"message":"exit 1"`, new: `"error_detail":"exit 1","Message":"evil"`},
		{name: "Volume", golden: initial, old: exactContents, new: exactContents + `,"CONTENTS":"evil"`},
		{name: "VolumeRequiredVariantOnly", golden: initial, old: exactContents, new: `"Contents":"UEsDBBQAAAAI..."`, missing: "contents"},
		{name: "MultiVolumePart", golden: volumes, old: `"repo_id":"org/model"`, new: `"repo_id":"org/model","Repo_Id":"evil","to\u212aen":"evil"`},
		{name: "MultiVolume", golden: volumes, old: `"volumes":[`, new: `"Volumes":[],"volumes":[`},
		{name: "UploadPart", golden: volumes, old: `"url":"https://example.com/q"`, new: `"url":"https://example.com/q","URL":"https://evil"`},
		{name: "SystemOutput", golden: volumes, old: `"url":"https://example.com/z"`, new: `"url":"https://example.com/z","Url":"https://evil"`},
		{name: "ZipPostFormFields", golden: zipPost, old: `"form_fields":{}`, new: `"form_fields":{},"FORM_FIELDS":{"k":"evil"}`},
		{name: "StreamingDetails", golden: streaming, old: `"public_key":"PEM…"`, new: `"public_key":"PEM…","PUBLIC_KEY":"evil"`},
		{name: "ExecutorTiming", golden: streaming, old: `"allowed_leeway":5`, new: `"allowed_leeway":5,"Allowed_Leeway":99`},
		{name: "ReceiptPayload", golden: initial, old: `"ttl":298`, new: `"ttl":298,"TTL":1`},
		{name: "ReceiptPayloadRequiredVariantOnly", golden: initial, old: `"is_organic":false`, new: `"Is_Organic":false`, missing: "is_organic"},
		{name: "DeclineReason", golden: decline, old: `"reason":"busy"`, new: `"reason":"busy","REASON":"unknown"`},
		{name: "DeclineReceipt", golden: decline, old: `"miner_signature":"0x…"`, new: `"miner_signature":"0x…","Miner_Signature":"0xevil"`},
		{name: "DeclineReceiptPayload", golden: decline, old: `"job_uuid":"5c6d…"`, new: `"job_uuid":"5c6d…","JOB_UUID":"7b9e…"`},
		{name: "ReceiptRequest", golden: receipt, old: `"score_str":"1"`, new: `"score_str":"1","Score_Str":"0"`},
		{name: "MachineSpecs", golden: specs, old: `"cpu":{"count":32}}`, new: `"cpu":{"count":32}},"Specs":{"evil":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			golden := goldenFrames(t)["testdata/"+tt.golden]
			require.Equal(t, 1, strings.Count(string(golden), tt.old))
			frame := strings.Replace(string(golden), tt.old, tt.new, 1)

			msg, err := Decode([]byte(frame))
			if tt.missing != "" {
				var decodeErr *DecodeError
				require.ErrorAs(t, err, &decodeErr)
				require.Equal(t, KindMissingField, decodeErr.Kind, "%v", err)
				require.Equal(t, tt.missing, decodeErr.Field)
				return
			}
			require.NoError(t, err)
			want, err := Decode(golden)
			require.NoError(t, err)
			require.Equal(t, want, msg)
		})
	}
}
