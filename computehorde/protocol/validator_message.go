package protocol

import (
	"encoding/json"

	"drover.dev/computehorde/internal/jsonwire"
	"drover.dev/computehorde/receipts"
)

// ValidatorAuthForMiner is the validator's first frame; NewValidatorAuth builds and signs it.
type ValidatorAuthForMiner struct {
	ValidatorHotkey string `json:"validator_hotkey"`
	MinerHotkey     string `json:"miner_hotkey"`
	// Timestamp is in unix seconds.
	Timestamp int64  `json:"timestamp"`
	Signature string `json:"signature"`
}

// V0InitialJobRequest announces a job so the miner can start an executor of ExecutorClass.
type V0InitialJobRequest struct {
	JobUUID       string  `json:"job_uuid"`
	ExecutorClass string  `json:"executor_class"`
	DockerImage   *string `json:"docker_image"`
	// TimeoutSeconds is deprecated upstream but still the executor's only deadline when
	// ExecutorTiming is nil.
	TimeoutSeconds             *int                `json:"timeout_seconds"`
	Volume                     Volume              `json:"volume"`
	JobStartedReceiptPayload   receipts.JobStarted `json:"job_started_receipt_payload"`
	JobStartedReceiptSignature string              `json:"job_started_receipt_signature"`
	StreamingDetails           *StreamingDetails   `json:"streaming_details"`
	ExecutorTiming             *ExecutorTiming     `json:"executor_timing"`
}

// StreamingDetails asks for a streaming job; PublicKey is the validator's TLS certificate.
type StreamingDetails struct {
	PublicKey  string  `json:"public_key"`
	ExecutorIP *string `json:"executor_ip"`
}

// ExecutorTiming gives the executor one deadline per stage, in seconds.
type ExecutorTiming struct {
	AllowedLeeway           int `json:"allowed_leeway"`
	DownloadTimeLimit       int `json:"download_time_limit"`
	ExecutionTimeLimit      int `json:"execution_time_limit"`
	UploadTimeLimit         int `json:"upload_time_limit"`
	StreamingStartTimeLimit int `json:"streaming_start_time_limit"`
}

// V0JobRequest gives the miner the job to run on its ready executor.
type V0JobRequest struct {
	JobUUID                string                 `json:"job_uuid"`
	ExecutorClass          string                 `json:"executor_class"`
	DockerImage            string                 `json:"docker_image"`
	RawScript              *string                `json:"raw_script"`
	DockerRunOptionsPreset DockerRunOptionsPreset `json:"docker_run_options_preset"`
	DockerRunCmd           List[string]           `json:"docker_run_cmd"`
	Env                    StringMap              `json:"env"`
	// Volume must be nil when V0InitialJobRequest carried one: miners reject a second volume.
	Volume       Volume       `json:"volume"`
	OutputUpload OutputUpload `json:"output_upload"`
	ArtifactsDir *string      `json:"artifacts_dir"`
}

// V0JobAcceptedReceiptRequest delivers the JobAccepted receipt.
type V0JobAcceptedReceiptRequest struct {
	Payload   receipts.JobAccepted `json:"payload"`
	Signature string               `json:"signature"`
}

// V0JobFinishedReceiptRequest delivers the JobFinished receipt.
type V0JobFinishedReceiptRequest struct {
	Payload   receipts.JobFinished `json:"payload"`
	Signature string               `json:"signature"`
}

// GenericError reports a problem in either direction; Details may be nil.
type GenericError struct {
	Details *string `json:"details"`
}

// V0MainHotkeyMessage carries a main hotkey; a validator sends nil to ask for the miner's.
type V0MainHotkeyMessage struct {
	MainHotkey *string `json:"main_hotkey"`
}

// UnmarshalJSON decodes the volume by its volume_type.
func (m *V0InitialJobRequest) UnmarshalJSON(data []byte) error {
	type plain V0InitialJobRequest
	aux := struct {
		*plain
		Volume json.RawMessage `json:"volume"`
	}{plain: (*plain)(m)}
	if err := jsonwire.Unmarshal(data, &aux, "message_type"); err != nil {
		return err
	}
	volume, err := decodeVolume(aux.Volume, true)
	m.Volume = volume
	return err
}

// UnmarshalJSON decodes the volume and output upload by their discriminators.
func (m *V0JobRequest) UnmarshalJSON(data []byte) error {
	type plain V0JobRequest
	aux := struct {
		*plain
		Volume       json.RawMessage `json:"volume"`
		OutputUpload json.RawMessage `json:"output_upload"`
	}{plain: (*plain)(m)}
	if err := jsonwire.Unmarshal(data, &aux, "message_type"); err != nil {
		return err
	}
	volume, err := decodeVolume(aux.Volume, true)
	if err != nil {
		return err
	}
	upload, err := decodeOutputUpload(aux.OutputUpload, anyUploadType...)
	if err != nil {
		return err
	}
	m.Volume, m.OutputUpload = volume, upload
	return nil
}
