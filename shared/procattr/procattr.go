// Package procattr sets how a child process is tied to the process that starts it. Drover's
// tests and make run start long-lived children (service binaries, minersim, re-executions of the
// test binary); when the parent is killed (a go test timeout, Ctrl-C, SIGKILL) nothing stops
// them, and they keep the fixed ports the next make run needs. DieWithParent is the one place
// that asks the kernel to kill them instead.
package procattr
