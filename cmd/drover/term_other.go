//go:build !unix

package main

import "io"

// terminalWidth is 0 (unknown) where drover cannot ask the terminal: progress lines are then
// printed whole.
func terminalWidth(io.Writer) int { return 0 }
