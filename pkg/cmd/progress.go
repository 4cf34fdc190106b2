package cmd

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kubectl-terminating/kubectl-terminating/pkg/collect"
	"github.com/kubectl-terminating/kubectl-terminating/pkg/report"
)

// A run's progress line appears once the run takes longer than
// progressDelay, and is redrawn every progressEvery. Variables, so that a
// test can make every run long.
var (
	progressDelay = time.Second
	progressEvery = 250 * time.Millisecond
)

// statusLine is the last line of a terminal's stderr, redrawn in place:
// what the run does and for how long. Whatever else is printed erases it
// first (above). Off a terminal there is none: a nil statusLine draws
// nothing.
type statusLine struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	shown bool
}

// status is the run's status line, made at its first use: nil when stderr
// is no terminal.
func (o *Options) status() *statusLine {
	o.lineOnce.Do(func() {
		if !o.isTerminal(o.ErrOut) {
			return
		}
		width := terminalWidth(o.ErrOut)
		if width <= 0 {
			width = 80
		}
		o.line = &statusLine{w: o.ErrOut, width: width}
	})
	return o.line
}

// stderr is where a run says something on stderr: above its status line.
func (o *Options) stderr() io.Writer { return o.status().above(o.ErrOut) }

// show draws text in place of the line, cut to the terminal's width: a
// line that wrapped would be erased only in part.
func (s *statusLine) show(text string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := []rune(text); len(r) >= s.width {
		text = string(r[:s.width-1])
	}
	fmt.Fprint(s.w, "\r\033[K"+text)
	s.shown = true
}

// clear erases the line, if it is drawn.
func (s *statusLine) clear() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.erase()
}

func (s *statusLine) erase() {
	if s.shown {
		fmt.Fprint(s.w, "\r\033[K")
		s.shown = false
	}
}

// above writes to w what must stay on the screen, erasing the status line
// first (it is drawn again at its next refresh).
func (s *statusLine) above(w io.Writer) io.Writer {
	if s == nil {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.erase()
		return w.Write(p)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// showProgress draws, on a terminal's stderr, what the collector reads and
// for how long ("3s: reading the cluster: 2/5 types listed, 10 objects
// seen"), from progressDelay on and until stop, which erases it. Off a
// terminal it draws nothing.
func (o *Options) showProgress(p *collect.Progress) (stop func()) {
	line := o.status()
	if line == nil || p == nil {
		return func() {}
	}
	start := o.clock.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		delay := o.clock.NewTimer(progressDelay)
		defer delay.Stop()
		select {
		case <-done:
			return
		case <-delay.C():
		}
		tick := o.clock.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			line.show(fmt.Sprintf("%s: %s", report.HumanDuration(o.clock.Since(start)), p))
			select {
			case <-done:
				return
			case <-tick.C():
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		line.clear()
	}
}
