package protocol

import (
	"drover.dev/computehorde/internal/jsonwire"
	"drover.dev/computehorde/receipts"
)

// UnauthorizedError tells the validator it may not use this miner.
type UnauthorizedError struct {
	Code    UnauthorizedCode `json:"code"`
	Details *string          `json:"details"`
}

// V0ExecutorManifestRequest lists the miner's executors; the miner sends it right after auth.
type V0ExecutorManifestRequest struct {
	Manifest Manifest `json:"manifest"`
}

// V0AcceptJobRequest accepts a job announced by V0InitialJobRequest.
type V0AcceptJobRequest struct {
	JobUUID string `json:"job_uuid"`
}

// V0DeclineJobRequest declines a job. A busy miner lists receipts of the jobs keeping its
// executors busy (see receipts.Excuse).
type V0DeclineJobRequest struct {
	JobUUID  string                 `json:"job_uuid"`
	Message  string                 `json:"message"`
	Reason   JobRejectionReason     `json:"reason"`
	Receipts List[receipts.Receipt] `json:"receipts"`
	Context  Object                 `json:"context"`
}

// V0ExecutorReadyRequest says the job's executor is up.
type V0ExecutorReadyRequest struct {
	JobUUID       string  `json:"job_uuid"`
	ExecutorToken *string `json:"executor_token"`
}

// V0ExecutorFailedRequest says the executor did not start. Deprecated upstream in favour of
// V0HordeFailedRequest with executor_spinup_failed, but older miners still send it.
type V0ExecutorFailedRequest struct {
	JobUUID       string  `json:"job_uuid"`
	ExecutorToken *string `json:"executor_token"`
}

// V0StreamingJobReadyRequest says a streaming job is listening at IP:Port.
type V0StreamingJobReadyRequest struct {
	JobUUID        string  `json:"job_uuid"`
	ExecutorToken  *string `json:"executor_token"`
	PublicKey      string  `json:"public_key"`
	IP             *string `json:"ip"`
	Port           int     `json:"port"`
	MinerSignature *string `json:"miner_signature"`
}

// V0StreamingJobNotReadyRequest says a streaming job failed to start. Deprecated upstream.
type V0StreamingJobNotReadyRequest struct {
	JobUUID       string  `json:"job_uuid"`
	ExecutorToken *string `json:"executor_token"`
}

// V0VolumesReadyRequest says the job's volumes are downloaded.
type V0VolumesReadyRequest struct {
	JobUUID string `json:"job_uuid"`
}

// V0ExecutionDoneRequest says the job's container exited.
type V0ExecutionDoneRequest struct {
	JobUUID string `json:"job_uuid"`
}

// V0JobFinishedRequest carries a finished job's output.
type V0JobFinishedRequest struct {
	JobUUID             string            `json:"job_uuid"`
	DockerProcessStdout string            `json:"docker_process_stdout"`
	DockerProcessStderr string            `json:"docker_process_stderr"`
	Artifacts           map[string]string `json:"artifacts"`
	UploadResults       map[string]string `json:"upload_results"`
}

// V0JobFailedRequest reports a job that failed on the executor. On input, error_detail and
// error_type are accepted for message and reason; message and reason win when both appear.
type V0JobFailedRequest struct {
	JobUUID                 string           `json:"job_uuid"`
	Message                 string           `json:"message"`
	Reason                  JobFailureReason `json:"reason"`
	Stage                   JobStage         `json:"stage"`
	DockerProcessExitStatus *int             `json:"docker_process_exit_status"`
	DockerProcessStdout     *string          `json:"docker_process_stdout"`
	DockerProcessStderr     *string          `json:"docker_process_stderr"`
	Context                 Object           `json:"context"`
}

// V0HordeFailedRequest reports a failure of the horde around the job, such as an executor
// that did not spin up.
type V0HordeFailedRequest struct {
	JobUUID    string             `json:"job_uuid"`
	ReportedBy JobParticipantType `json:"reported_by"`
	Message    string             `json:"message"`
	Reason     HordeFailureReason `json:"reason"`
	Context    Object             `json:"context"`
}

// V0MachineSpecsRequest describes the executor's machine.
type V0MachineSpecsRequest struct {
	JobUUID string       `json:"job_uuid"`
	Specs   MachineSpecs `json:"specs"`
}

// MachineSpecs wraps the free-form specs object as upstream nests it: {"specs": {...}}.
type MachineSpecs struct {
	Specs Object `json:"specs"`
}

// MarshalJSON writes a nil Specs as {}: upstream requires an object there, so null would make
// an upstream validator reject the whole message.
func (s MachineSpecs) MarshalJSON() ([]byte, error) {
	specs := s.Specs
	if specs == nil {
		specs = Object("{}")
	}
	return jsonwire.Marshal(struct {
		Specs Object `json:"specs"`
	}{specs})
}

// UnmarshalJSON applies the error_detail and error_type aliases.
func (m *V0JobFailedRequest) UnmarshalJSON(data []byte) error {
	type plain V0JobFailedRequest
	aux := struct {
		*plain
		Message     *string           `json:"message"`
		Reason      *JobFailureReason `json:"reason"`
		ErrorDetail *string           `json:"error_detail"`
		ErrorType   *JobFailureReason `json:"error_type"`
	}{plain: (*plain)(m)}
	if err := jsonwire.Unmarshal(data, &aux, "message_type"); err != nil {
		return err
	}
	switch {
	case aux.Message != nil:
		m.Message = *aux.Message
	case aux.ErrorDetail != nil:
		m.Message = *aux.ErrorDetail
	}
	switch {
	case aux.Reason != nil:
		m.Reason = *aux.Reason
	case aux.ErrorType != nil:
		m.Reason = *aux.ErrorType
	}
	return nil
}
