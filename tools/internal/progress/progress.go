// Package progress shows how far a long loop has got: on a terminal a bar
// redrawn in place (count, rate, elapsed and remaining time); anywhere else
// (a CI log, a pipe into tee, a file) a plain line now and then, since every
// carriage-return redraw of a bar would land in the log as a line of its own.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Options configure a Bar.
type Options struct {
	Total       int    // steps in all
	Done        int    // steps already done (a resumed run)
	Description string // shown before the count; Describe changes it
	Unit        string // what a step is, as "steps" or "iters" [steps]
	// Every is the least time between two plain lines [10s]. The first
	// step and the last always print one.
	Every time.Duration
	// Plain forces plain lines even on a terminal.
	Plain bool
}

// Bar is a progress display. Its methods may be called from several
// goroutines.
type Bar struct {
	mu    sync.Mutex
	o     Options
	bar   *progressbar.ProgressBar // nil in plain mode
	w     io.Writer
	n     int
	start time.Time
	first int       // steps done when the bar started
	last  time.Time // of the last plain line
	ended bool
	now   func() time.Time
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// New starts a bar writing to w: a redrawn bar when w is a terminal, plain
// lines otherwise.
func New(w io.Writer, o Options) *Bar {
	if o.Unit == "" {
		o.Unit = "steps"
	}
	if o.Every == 0 {
		o.Every = 10 * time.Second
	}
	b := &Bar{o: o, w: w, n: o.Done, first: o.Done, now: time.Now}
	b.start = b.now()
	if !o.Plain && IsTerminal(w) {
		b.bar = progressbar.NewOptions(o.Total, progressbar.OptionSetWriter(w), progressbar.OptionShowCount(),
			progressbar.OptionShowIts(), progressbar.OptionSetItsString(o.Unit), progressbar.OptionSetWidth(30),
			progressbar.OptionSetDescription(o.Description), progressbar.OptionClearOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond))
		b.bar.Set(o.Done)
	}
	return b
}

// Describe sets the text shown before the count (the latest loss, say).
func (b *Bar) Describe(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.o.Description = s
	if b.bar != nil {
		b.bar.Describe(s)
	}
}

// Add advances the bar by n steps.
func (b *Bar) Add(n int) { b.Set(b.count() + n) }

func (b *Bar) count() int { b.mu.Lock(); defer b.mu.Unlock(); return b.n }

// Set sets the steps done.
func (b *Bar) Set(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	prev := b.n
	b.n = n
	if b.bar != nil {
		b.bar.Set(n)
		return
	}
	now := b.now()
	if (prev == b.first && n > prev) || n >= b.o.Total || now.Sub(b.last) >= b.o.Every {
		b.line(now)
	}
}

// line writes one plain line: description, count, rate and time left.
func (b *Bar) line(now time.Time) {
	b.last = now
	var s strings.Builder
	if b.o.Description != "" {
		s.WriteString(b.o.Description)
		s.WriteString("  ")
	}
	fmt.Fprintf(&s, "%d/%d", b.n, b.o.Total)
	if b.o.Total > 0 {
		fmt.Fprintf(&s, " (%d%%)", 100*b.n/b.o.Total)
	}
	el := now.Sub(b.start)
	if done := b.n - b.first; done > 0 && el > 0 {
		rate := float64(done) / el.Seconds()
		fmt.Fprintf(&s, "  %.2f %s/s  elapsed %s", rate, b.o.Unit, el.Round(time.Second))
		if left := b.o.Total - b.n; left > 0 {
			fmt.Fprintf(&s, "  ETA %s", time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second))
		}
	}
	s.WriteByte('\n')
	io.WriteString(b.w, s.String())
}

// Finish ends the bar: on a terminal it is cleared, in plain mode a last
// line is written unless the last step already wrote it. Finish is
// idempotent.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended {
		return
	}
	b.ended = true
	if b.bar != nil {
		b.bar.Exit()
		return
	}
	if !b.last.IsZero() && b.n >= b.o.Total {
		return // the last step wrote its line
	}
	b.line(b.now())
}
