package protocol

import (
	"encoding/json"
	"reflect"
	"slices"

	"drover.dev/computehorde/internal/jsonwire"
)

// JobRejectionReason says why a miner declined a job.
type JobRejectionReason string

// The JobRejectionReason values.
const (
	RejectionUnknown              JobRejectionReason = "unknown"
	RejectionBusy                 JobRejectionReason = "busy"
	RejectionInvalidSignature     JobRejectionReason = "invalid_signature"
	RejectionNoMinerForJob        JobRejectionReason = "no_miner_for_job"
	RejectionValidatorBlacklisted JobRejectionReason = "validator_blacklisted"
)

// JobFailureReason says why a job failed on the executor.
type JobFailureReason string

// The JobFailureReason values.
const (
	FailureUnknown           JobFailureReason = "unknown"
	FailureTimeout           JobFailureReason = "timeout"
	FailureNonzeroReturnCode JobFailureReason = "nonzero_return_code"
	FailureDownloadFailed    JobFailureReason = "download_failed"
	FailureUploadFailed      JobFailureReason = "upload_failed"
)

// JobStage is where in its life a job failed.
type JobStage string

// The JobStage values.
const (
	StageUnknown          JobStage = "unknown"
	StageExecutorStartup  JobStage = "executor_startup"
	StageVolumeDownload   JobStage = "volume_download"
	StageStreamingStartup JobStage = "streaming_startup"
	StageExecution        JobStage = "execution"
	StageResultUpload     JobStage = "result_upload"
)

// JobParticipantType names who reported a horde failure.
type JobParticipantType string

// The JobParticipantType values.
const (
	ParticipantUnknown     JobParticipantType = "unknown"
	ParticipantSDK         JobParticipantType = "sdk"
	ParticipantFacilitator JobParticipantType = "facilitator"
	ParticipantValidator   JobParticipantType = "validator"
	ParticipantMiner       JobParticipantType = "miner"
	ParticipantExecutor    JobParticipantType = "executor"
)

// HordeFailureReason says why the horde (not the job itself) failed.
type HordeFailureReason string

// The HordeFailureReason values.
const (
	HordeUnknown                           HordeFailureReason = "unknown"
	HordeGenericError                      HordeFailureReason = "generic_error"
	HordeUnhandledException                HordeFailureReason = "unhandled_exception"
	HordeUnhandledTimeout                  HordeFailureReason = "unhandled_timeout"
	HordeStreamingFailed                   HordeFailureReason = "streaming_failed"
	HordeMinerConnectionFailed             HordeFailureReason = "miner_connection_failed"
	HordeInitialResponseTimedOut           HordeFailureReason = "initial_response_timed_out"
	HordeExecutorReadinessResponseTimedOut HordeFailureReason = "executor_readiness_response_timed_out"
	HordeVolumesTimedOut                   HordeFailureReason = "volumes_timed_out"
	HordeStreamingJobReadyTimedOut         HordeFailureReason = "streaming_job_ready_timed_out"
	HordeExecutionTimedOut                 HordeFailureReason = "execution_timed_out"
	HordeFinalResponseTimedOut             HordeFailureReason = "final_response_timed_out"
	HordeExecutorSpinupFailed              HordeFailureReason = "executor_spinup_failed"
	HordeExecutorDisconnected              HordeFailureReason = "executor_disconnected"
	HordeSecurityCheckFailed               HordeFailureReason = "security_check_failed"
)

// UnauthorizedCode is UnauthorizedError's code. Unlike the enums above, an unknown code is kept
// as sent: any UnauthorizedError means "unauthorized" whatever its code, and the raw code is
// what an operator needs in the log.
type UnauthorizedCode string

// The UnauthorizedCode values miners send today.
const (
	CodeTokenTooOld       UnauthorizedCode = "TOKEN_TOO_OLD"
	CodeUnknownValidator  UnauthorizedCode = "UNKNOWN_VALIDATOR"
	CodeValidatorInactive UnauthorizedCode = "VALIDATOR_INACTIVE"
)

// DockerRunOptionsPreset selects the docker options a miner runs a job with. An unknown preset
// is a decode error (KindInvalidValue), as upstream's Literal makes it: guessing docker options
// would run the job wrongly rather than not at all.
type DockerRunOptionsPreset string

// The DockerRunOptionsPreset values.
const (
	PresetNvidiaAll DockerRunOptionsPreset = "nvidia_all"
	PresetNone      DockerRunOptionsPreset = "none"
)

var (
	rejectionReasons = []JobRejectionReason{RejectionUnknown, RejectionBusy, RejectionInvalidSignature, RejectionNoMinerForJob, RejectionValidatorBlacklisted}
	failureReasons   = []JobFailureReason{FailureUnknown, FailureTimeout, FailureNonzeroReturnCode, FailureDownloadFailed, FailureUploadFailed}
	jobStages        = []JobStage{StageUnknown, StageExecutorStartup, StageVolumeDownload, StageStreamingStartup, StageExecution, StageResultUpload}
	participantTypes = []JobParticipantType{ParticipantUnknown, ParticipantSDK, ParticipantFacilitator, ParticipantValidator, ParticipantMiner, ParticipantExecutor}
	hordeReasons     = []HordeFailureReason{
		HordeUnknown, HordeGenericError, HordeUnhandledException, HordeUnhandledTimeout, HordeStreamingFailed,
		HordeMinerConnectionFailed, HordeInitialResponseTimedOut, HordeExecutorReadinessResponseTimedOut,
		HordeVolumesTimedOut, HordeStreamingJobReadyTimedOut, HordeExecutionTimedOut, HordeFinalResponseTimedOut,
		HordeExecutorSpinupFailed, HordeExecutorDisconnected, HordeSecurityCheckFailed,
	}
)

// MarshalJSON writes the reason, or "unknown" for the zero value: upstream's default, and the
// only way to send "no reason" that an upstream enum accepts.
func (r JobRejectionReason) MarshalJSON() ([]byte, error) {
	return encodeEnum(r, RejectionUnknown)
}

// MarshalJSON writes the reason, or "unknown" for the zero value.
func (r JobFailureReason) MarshalJSON() ([]byte, error) {
	return encodeEnum(r, FailureUnknown)
}

// MarshalJSON writes the stage, or "unknown" for the zero value.
func (s JobStage) MarshalJSON() ([]byte, error) {
	return encodeEnum(s, StageUnknown)
}

// MarshalJSON writes the participant, or "unknown" for the zero value.
func (p JobParticipantType) MarshalJSON() ([]byte, error) {
	return encodeEnum(p, ParticipantUnknown)
}

// MarshalJSON writes the reason, or "unknown" for the zero value.
func (r HordeFailureReason) MarshalJSON() ([]byte, error) {
	return encodeEnum(r, HordeUnknown)
}

// UnmarshalJSON reads a known value, or RejectionUnknown for anything else.
func (r *JobRejectionReason) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, r, rejectionReasons, RejectionUnknown)
}

// UnmarshalJSON reads a known value, or FailureUnknown for anything else.
func (r *JobFailureReason) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, r, failureReasons, FailureUnknown)
}

// UnmarshalJSON reads a known value, or StageUnknown for anything else.
func (s *JobStage) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, s, jobStages, StageUnknown)
}

// UnmarshalJSON reads a known value, or ParticipantUnknown for anything else.
func (p *JobParticipantType) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, p, participantTypes, ParticipantUnknown)
}

// UnmarshalJSON reads a known value, or HordeUnknown for anything else.
func (r *HordeFailureReason) UnmarshalJSON(data []byte) error {
	return decodeEnum(data, r, hordeReasons, HordeUnknown)
}

// UnmarshalJSON accepts only the presets upstream knows.
func (p *DockerRunOptionsPreset) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if DockerRunOptionsPreset(s) != PresetNvidiaAll && DockerRunOptionsPreset(s) != PresetNone {
		return &jsonwire.ValueError{Field: "docker_run_options_preset", Value: s}
	}
	*p = DockerRunOptionsPreset(s)
	return nil
}

// encodeEnum writes v as a JSON string, the zero value as unknown. Values outside the known set
// are written as they are: the caller chose them, and dropping them silently would hide a bug.
func encodeEnum[E ~string](v, unknown E) ([]byte, error) {
	if v == "" {
		v = unknown
	}
	return jsonwire.Marshal(string(v))
}

// decodeEnum stores the string in data if known and unknown otherwise; null also reads as
// unknown, as upstream's enum fallback does. Other JSON types are type errors.
func decodeEnum[E ~string](data []byte, dst *E, known []E, unknown E) error {
	if string(data) == "null" {
		*dst = unknown
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(data), Type: reflect.TypeFor[E]()}
	}
	if slices.Contains(known, E(s)) {
		*dst = E(s)
	} else {
		*dst = unknown
	}
	return nil
}

// jsonKind names the JSON type data starts with, for type errors.
func jsonKind(data []byte) string {
	if len(data) == 0 {
		return "empty"
	}
	switch data[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	default:
		return "number"
	}
}
