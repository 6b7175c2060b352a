package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// printer writes devrun's progress lines, stamped with the time since start.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newPrinter(w io.Writer) *printer { return &printer{w: w, start: time.Now()} }

func (p *printer) line(mark, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%6.1fs] %s %s\n", time.Since(p.start).Seconds(), mark, fmt.Sprintf(format, args...))
}

func (p *printer) step(format string, args ...any) { p.line("==>", format, args...) }
func (p *printer) ok(format string, args ...any)   { p.line(" ok", format, args...) }
func (p *printer) fail(format string, args ...any) { p.line("ERR", format, args...) }
func (p *printer) info(format string, args ...any) { p.line("   ", format, args...) }
