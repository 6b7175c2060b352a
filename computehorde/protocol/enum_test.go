package protocol

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEnumsMapUnknownValues(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		input string
		dst   any
		want  any
	}{
		{name: "RejectionKnown", input: `"busy"`, dst: new(JobRejectionReason), want: RejectionBusy},
		{name: "RejectionUnknown", input: `"tired"`, dst: new(JobRejectionReason), want: RejectionUnknown},
		{name: "RejectionNull", input: `null`, dst: new(JobRejectionReason), want: RejectionUnknown},
		{name: "FailureUnknown", input: `"TIMEOUT"`, dst: new(JobFailureReason), want: FailureUnknown},
		{name: "StageKnown", input: `"result_upload"`, dst: new(JobStage), want: StageResultUpload},
		{name: "ParticipantKnown", input: `"executor"`, dst: new(JobParticipantType), want: ParticipantExecutor},
		{name: "HordeKnown", input: `"security_check_failed"`, dst: new(HordeFailureReason), want: HordeSecurityCheckFailed},
		{name: "HordeUnknown", input: `""`, dst: new(HordeFailureReason), want: HordeUnknown},
		{name: "PresetKnown", input: `"nvidia_all"`, dst: new(DockerRunOptionsPreset), want: PresetNvidiaAll},
		{name: "CodeKeptVerbatim", input: `"NEW_CODE"`, dst: new(UnauthorizedCode), want: UnauthorizedCode("NEW_CODE")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			require.NoError(t, json.Unmarshal([]byte(tt.input), tt.dst))
			require.Equal(t, tt.want, reflectElem(tt.dst))
		})
	}
}

func TestEnumsRejectWrongTypes(t *testing.T) {
	t.Parallel()

	var reason JobRejectionReason
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, json.Unmarshal([]byte(`1`), &reason), &typeErr)

	var preset DockerRunOptionsPreset
	require.Error(t, json.Unmarshal([]byte(`"privileged"`), &preset))
	require.Error(t, json.Unmarshal([]byte(`null`), &preset))
}

// reflectElem dereferences the enum pointers of the table above.
func reflectElem(p any) any {
	switch p := p.(type) {
	case *JobRejectionReason:
		return *p
	case *JobFailureReason:
		return *p
	case *JobStage:
		return *p
	case *JobParticipantType:
		return *p
	case *HordeFailureReason:
		return *p
	case *DockerRunOptionsPreset:
		return *p
	case *UnauthorizedCode:
		return *p
	}
	return nil
}
