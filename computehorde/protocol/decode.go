package protocol

import (
	"encoding/json"
	"errors"
	"fmt"

	"drover.dev/computehorde/internal/jsonwire"
)

// DefaultMaxFrameSize bounds the frames Decode accepts. Upstream allows 50 MiB, but no message
// of a synthetic batch comes near 1 MiB (the largest, V0InitialJobRequest with an inline
// hashcat volume, is a few KiB), and a small bound keeps a misbehaving miner from costing
// the validator more than a few MiB per connection.
const DefaultMaxFrameSize = 1 << 20

// ErrorKind classifies decode failures.
type ErrorKind int

// The ErrorKind values.
const (
	// KindMalformedJSON: the frame is not JSON.
	KindMalformedJSON ErrorKind = iota + 1
	// KindFrameTooLarge: the frame exceeds the decoder's MaxFrameSize; it was not parsed.
	KindFrameTooLarge
	// KindUnknownMessageType: no such message_type, or not one this peer may send.
	KindUnknownMessageType
	// KindMissingField: a required field is absent.
	KindMissingField
	// KindWrongType: a field (or the frame) has the wrong JSON type, or is null where null
	// is not allowed.
	KindWrongType
	// KindInvalidValue: a field has the right type but a value outside what is allowed, such
	// as an unknown volume_type or a malformed timestamp.
	KindInvalidValue
)

// String names the kind in snake case, suitable for logs and metrics.
func (k ErrorKind) String() string {
	switch k {
	case KindMalformedJSON:
		return "malformed_json"
	case KindFrameTooLarge:
		return "frame_too_large"
	case KindUnknownMessageType:
		return "unknown_message_type"
	case KindMissingField:
		return "missing_field"
	case KindWrongType:
		return "wrong_type"
	case KindInvalidValue:
		return "invalid_value"
	default:
		return fmt.Sprintf("error_kind_%d", int(k))
	}
}

// DecodeError says why a frame could not be decoded. The connection can carry on: answer with
// GenericErrorReply and read the next frame.
type DecodeError struct {
	Kind ErrorKind
	// MessageType is the frame's message_type when it was readable.
	MessageType string
	// Field is the offending field when known, relative to the innermost object that held it.
	Field string
	Err   error
}

// Error implements error.
func (e *DecodeError) Error() string {
	msg := "decode " + e.Kind.String()
	if e.MessageType != "" {
		msg += " in " + e.MessageType
	}
	if e.Field != "" {
		msg += " field " + e.Field
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *DecodeError) Unwrap() error { return e.Err }

// GenericErrorReply is the answer upstream gives an unparseable frame.
func (e *DecodeError) GenericErrorReply() *GenericError {
	details := "Malformed message: " + e.Error()
	return &GenericError{Details: &details}
}

// Decoder decodes frames. The zero value is ready to use with DefaultMaxFrameSize.
type Decoder struct {
	// MaxFrameSize is the largest frame accepted, in bytes; zero means DefaultMaxFrameSize.
	MaxFrameSize int
}

// Decode reads a frame of any message type from either side.
func Decode(frame []byte) (Message, error) {
	return Decoder{}.decode(frame, SenderValidator|SenderMiner)
}

// DecodeFromMiner reads a frame a miner sent, as the validator does.
func DecodeFromMiner(frame []byte) (Message, error) {
	return Decoder{}.decode(frame, SenderMiner)
}

// DecodeFromValidator reads a frame a validator sent, as a (simulated) miner does.
func DecodeFromValidator(frame []byte) (Message, error) {
	return Decoder{}.decode(frame, SenderValidator)
}

// Decode reads a frame of any message type from either side.
func (d Decoder) Decode(frame []byte) (Message, error) {
	return d.decode(frame, SenderValidator|SenderMiner)
}

// DecodeFromMiner reads a frame a miner sent; validator-only message types are
// KindUnknownMessageType.
func (d Decoder) DecodeFromMiner(frame []byte) (Message, error) {
	return d.decode(frame, SenderMiner)
}

// DecodeFromValidator reads a frame a validator sent; miner-only message types are
// KindUnknownMessageType.
func (d Decoder) DecodeFromValidator(frame []byte) (Message, error) {
	return d.decode(frame, SenderValidator)
}

// decode checks the size before parsing, so a frame costs at most a small multiple of its
// size: one pass to validate, one to read message_type, one for required fields, one to check
// that keys match fields exactly, one to decode.
func (d Decoder) decode(frame []byte, from Sender) (Message, error) {
	limit := d.MaxFrameSize
	if limit <= 0 {
		limit = DefaultMaxFrameSize
	}
	if len(frame) > limit {
		return nil, &DecodeError{Kind: KindFrameTooLarge, Err: fmt.Errorf("%d bytes, limit %d", len(frame), limit)}
	}
	object, err := jsonwire.ParseObject(frame)
	if err != nil {
		return nil, classify(err, "")
	}
	messageType, err := tagOf(object, "message_type")
	if err != nil {
		return nil, classify(err, "")
	}
	kind, ok := messageKinds[messageType]
	if !ok || kind.sender&from == 0 {
		return nil, &DecodeError{Kind: KindUnknownMessageType, MessageType: messageType}
	}
	if err := object.Require(kind.required...); err != nil {
		return nil, classify(err, messageType)
	}
	msg := kind.zero()
	if err := object.Decode(msg, "message_type"); err != nil {
		return nil, classify(err, messageType)
	}
	return msg, nil
}

// classify turns a decoding error into a *DecodeError.
func classify(err error, messageType string) *DecodeError {
	de := &DecodeError{Kind: KindInvalidValue, MessageType: messageType, Err: err}
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		fieldErr  *jsonwire.FieldError
		valueErr  *jsonwire.ValueError
	)
	switch {
	case errors.As(err, &syntaxErr):
		de.Kind = KindMalformedJSON
	case errors.As(err, &typeErr):
		de.Kind, de.Field = KindWrongType, typeErr.Field
	case errors.As(err, &fieldErr) && fieldErr.Missing:
		de.Kind, de.Field = KindMissingField, fieldErr.Field
	case errors.As(err, &fieldErr):
		de.Kind, de.Field = KindWrongType, fieldErr.Field
	case errors.As(err, &valueErr):
		de.Field = valueErr.Field
	}
	return de
}
