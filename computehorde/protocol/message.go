package protocol

import "drover.dev/computehorde/internal/jsonwire"

// Message is any protocol message. Decode returns pointers (*V0JobRequest and so on); Encode
// takes values or pointers.
type Message interface {
	// MessageType returns the message_type discriminator.
	MessageType() string
}

// Sender says which side of a connection may send a message type.
type Sender uint8

// The senders. A message both sides may send has both bits set.
const (
	SenderValidator Sender = 1 << iota
	SenderMiner
)

// messageKind is what the decoder knows about a message type.
type messageKind struct {
	sender   Sender
	required []string
	// zero returns a new message holding upstream's defaults.
	zero func() Message
}

// both marks the messages either side may send.
const both = SenderValidator | SenderMiner

// messageKinds lists every message type. Required fields are those without an upstream
// default; a nullable field without one is treated as defaulting to null.
var messageKinds = map[string]messageKind{
	"GenericError":                  {both, nil, func() Message { return new(GenericError) }},
	"V0MainHotkeyMessage":           {both, nil, func() Message { return new(V0MainHotkeyMessage) }},
	"ValidatorAuthForMiner":         {SenderValidator, []string{"validator_hotkey", "miner_hotkey", "timestamp", "signature"}, func() Message { return new(ValidatorAuthForMiner) }},
	"V0InitialJobRequest":           {SenderValidator, []string{"job_uuid", "executor_class", "job_started_receipt_payload", "job_started_receipt_signature"}, func() Message { return new(V0InitialJobRequest) }},
	"V0JobRequest":                  {SenderValidator, []string{"job_uuid", "executor_class", "docker_image", "docker_run_options_preset", "docker_run_cmd"}, func() Message { return new(V0JobRequest) }},
	"V0JobAcceptedReceiptRequest":   {SenderValidator, []string{"payload", "signature"}, func() Message { return new(V0JobAcceptedReceiptRequest) }},
	"V0JobFinishedReceiptRequest":   {SenderValidator, []string{"payload", "signature"}, func() Message { return new(V0JobFinishedReceiptRequest) }},
	"UnauthorizedError":             {SenderMiner, []string{"code"}, func() Message { return new(UnauthorizedError) }},
	"V0ExecutorManifestRequest":     {SenderMiner, []string{"manifest"}, func() Message { return new(V0ExecutorManifestRequest) }},
	"V0AcceptJobRequest":            {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0AcceptJobRequest) }},
	"V0DeclineJobRequest":           {SenderMiner, []string{"job_uuid"}, func() Message { return &V0DeclineJobRequest{Reason: RejectionUnknown} }},
	"V0ExecutorReadyRequest":        {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0ExecutorReadyRequest) }},
	"V0ExecutorFailedRequest":       {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0ExecutorFailedRequest) }},
	"V0StreamingJobReadyRequest":    {SenderMiner, []string{"job_uuid", "public_key", "port"}, func() Message { return new(V0StreamingJobReadyRequest) }},
	"V0StreamingJobNotReadyRequest": {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0StreamingJobNotReadyRequest) }},
	"V0VolumesReadyRequest":         {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0VolumesReadyRequest) }},
	"V0ExecutionDoneRequest":        {SenderMiner, []string{"job_uuid"}, func() Message { return new(V0ExecutionDoneRequest) }},
	"V0JobFinishedRequest":          {SenderMiner, []string{"job_uuid", "docker_process_stdout", "docker_process_stderr"}, func() Message { return new(V0JobFinishedRequest) }},
	"V0JobFailedRequest":            {SenderMiner, []string{"job_uuid"}, func() Message { return &V0JobFailedRequest{Reason: FailureUnknown, Stage: StageUnknown} }},
	"V0HordeFailedRequest":          {SenderMiner, []string{"job_uuid", "reported_by", "message", "reason"}, func() Message { return new(V0HordeFailedRequest) }},
	"V0MachineSpecsRequest":         {SenderMiner, []string{"job_uuid", "specs"}, func() Message { return new(V0MachineSpecsRequest) }},
}

// Encode renders a message as upstream does: compact JSON, message_type first, then every
// field in upstream's order with nulls and defaults written out.
func Encode(m Message) ([]byte, error) {
	return jsonwire.MarshalTagged("message_type", m.MessageType(), m)
}

// MessageType implements Message.
func (GenericError) MessageType() string { return "GenericError" }

// MessageType implements Message.
func (V0MainHotkeyMessage) MessageType() string { return "V0MainHotkeyMessage" }

// MessageType implements Message.
func (ValidatorAuthForMiner) MessageType() string { return "ValidatorAuthForMiner" }

// MessageType implements Message.
func (V0InitialJobRequest) MessageType() string { return "V0InitialJobRequest" }

// MessageType implements Message.
func (V0JobRequest) MessageType() string { return "V0JobRequest" }

// MessageType implements Message.
func (V0JobAcceptedReceiptRequest) MessageType() string { return "V0JobAcceptedReceiptRequest" }

// MessageType implements Message.
func (V0JobFinishedReceiptRequest) MessageType() string { return "V0JobFinishedReceiptRequest" }

// MessageType implements Message.
func (UnauthorizedError) MessageType() string { return "UnauthorizedError" }

// MessageType implements Message.
func (V0ExecutorManifestRequest) MessageType() string { return "V0ExecutorManifestRequest" }

// MessageType implements Message.
func (V0AcceptJobRequest) MessageType() string { return "V0AcceptJobRequest" }

// MessageType implements Message.
func (V0DeclineJobRequest) MessageType() string { return "V0DeclineJobRequest" }

// MessageType implements Message.
func (V0ExecutorReadyRequest) MessageType() string { return "V0ExecutorReadyRequest" }

// MessageType implements Message.
func (V0ExecutorFailedRequest) MessageType() string { return "V0ExecutorFailedRequest" }

// MessageType implements Message.
func (V0StreamingJobReadyRequest) MessageType() string { return "V0StreamingJobReadyRequest" }

// MessageType implements Message.
func (V0StreamingJobNotReadyRequest) MessageType() string { return "V0StreamingJobNotReadyRequest" }

// MessageType implements Message.
func (V0VolumesReadyRequest) MessageType() string { return "V0VolumesReadyRequest" }

// MessageType implements Message.
func (V0ExecutionDoneRequest) MessageType() string { return "V0ExecutionDoneRequest" }

// MessageType implements Message.
func (V0JobFinishedRequest) MessageType() string { return "V0JobFinishedRequest" }

// MessageType implements Message.
func (V0JobFailedRequest) MessageType() string { return "V0JobFailedRequest" }

// MessageType implements Message.
func (V0HordeFailedRequest) MessageType() string { return "V0HordeFailedRequest" }

// MessageType implements Message.
func (V0MachineSpecsRequest) MessageType() string { return "V0MachineSpecsRequest" }
