package populate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// MaxErrorMessage is the length of the jobs table's error_message column, in characters.
const MaxErrorMessage = 2047

const truncatedSuffix = "...truncated"

// Errors the package records or returns.
var (
	// ErrInputChanged fails a three-part make whose inputs changed between the fetch outside the
	// transaction and the fetch inside it.
	ErrInputChanged = errors.New("input changed during make")

	// ErrNotReserved means the key's job is not (or no longer) reserved by this worker: another
	// worker has it, or an orphan sweep reclaimed it.
	ErrNotReserved = errors.New("job is not reserved by this worker")
)

// MakeError is a failure of make as recorded in the jobs table: DataJoint's
// "<ErrorClass>: <text>" message and a stack. HTTP functions answer with one; Go makes may return
// one to choose the class and stack.
type MakeError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// Error is DataJoint's error_message: "<Class>: <message>", or the class alone when the message
// is empty (Python's KeyboardInterrupt()).
func (e *MakeError) Error() string {
	if e.Message == "" {
		return e.Class
	}
	return e.Class + ": " + e.Message
}

// The classes DataJoint records for interrupted makes: populate's SIGTERM handler raises
// SystemExit("SIGTERM received"), and Ctrl-C raises KeyboardInterrupt().
const (
	classSystemExit        = "SystemExit"
	classKeyboardInterrupt = "KeyboardInterrupt"
	messageSIGTERM         = "SIGTERM received"
	// messageRiverUICancel is the message of the KeyboardInterrupt recorded for a make whose
	// River job was cancelled in River UI while it ran.
	messageRiverUICancel = "cancelled in River UI"
)

// describe returns the error_message and error_stack to record for err.
func describe(err error) (string, string) {
	var me *MakeError
	if errors.As(err, &me) {
		return truncateMessage(clean(me.Error())), clean(me.Stack)
	}
	return truncateMessage(clean(errorClass(err) + ": " + err.Error())), clean(errorChain(err))
}

// clean makes s storable as Postgres text, which refuses NUL and invalid UTF-8.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// errorClass names the innermost error's type, the closest Go has to Python's exception class.
func errorClass(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			break
		}
		err = next
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.String()
}

// errorChain is the stack we can offer for a plain Go error: each wrapping layer on its line.
func errorChain(err error) string {
	var b strings.Builder
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "%T: %s\n", e, e.Error())
	}
	return b.String()
}

// truncateMessage cuts msg to exactly MaxErrorMessage characters ending in "...truncated" when it
// is longer, and returns it unchanged otherwise. Characters, not bytes: the column counts runes.
func truncateMessage(msg string) string {
	if utf8.RuneCountInString(msg) <= MaxErrorMessage {
		return msg
	}
	r := []rune(msg)
	return string(r[:MaxErrorMessage-len(truncatedSuffix)]) + truncatedSuffix
}
