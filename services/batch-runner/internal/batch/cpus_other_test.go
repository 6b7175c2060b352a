//go:build !linux

package batch

import "errors"

// pinSelf is Linux only: elsewhere both sides share every core.
func pinSelf([]int) error { return errors.New("CPU affinity is Linux only here") }
