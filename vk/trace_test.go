package vk_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// traceStep traces captureStep: a step with temporaries made and freed
// inside it.
func traceStep(t *testing.T, d *vk.Device, in, out *vk.Buffer, words int, tag uint32) *vk.Trace {
	t.Helper()
	if err := d.BeginTrace(); err != nil {
		t.Fatal(err)
	}
	captureStep(t, d, in, out, words, tag)
	tr, err := d.EndTrace()
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTrace checks that a trace describes without recording: the same step
// traced twice, with new temporaries, is the same work; another input
// buffer or fill value is not, and Difference says where. Recording a
// trace gives the step's results, its freed temporaries kept until then;
// capturing one gives a graph that replays them; host reads and writes of
// a buffer the trace used are refused, of others not.
func TestTrace(t *testing.T) {
	d := devtest.Open(t)
	const words = 1000
	in, in2, out := alloc(t, d, 4*words), alloc(t, d, 4*words), alloc(t, d, 4*words+64)
	ref := alloc(t, d, 4*words+64)
	data := randBytes(3, 4*words)
	write(t, in, 0, data)

	s0 := d.Stats()
	a := traceStep(t, d, in, out, words, 7)
	b := traceStep(t, d, in, out, words, 7)
	if s := d.Stats(); s.Dispatches != s0.Dispatches || s.Copies != s0.Copies {
		t.Errorf("tracing recorded %d dispatches and %d copies, want none", s.Dispatches-s0.Dispatches, s.Copies-s0.Copies)
	}
	if a.Dispatches() != 2 || !a.Same(b) || a.Sum() != b.Sum() || a.Difference(b) != "" {
		t.Errorf("the same step traced twice: %d dispatches, same %v, difference %q", a.Dispatches(), a.Same(b), a.Difference(b))
	}
	b.Release()
	for _, c := range []struct {
		name string
		in   *vk.Buffer
		tag  uint32
		want string
	}{{"another input", in2, 7, "bindings"}, {"another fill value", in, 8, "fill value"}} {
		o := traceStep(t, d, c.in, out, words, c.tag)
		if o.Same(a) || !strings.Contains(o.Difference(a), c.want) {
			t.Errorf("%s: same %v, difference %q, want one naming %s", c.name, o.Same(a), o.Difference(a), c.want)
		}
		o.Release()
	}

	// Recorded: the step's results, from temporaries freed inside it.
	if err := a.Record(); err != nil {
		t.Fatal(err)
	}
	captureStep(t, d, in, ref, words, 7)
	checkBytes(t, "recorded trace", read(t, out, 0, int(out.Size())), read(t, ref, 0, int(ref.Size())))
	if err := a.Record(); err == nil {
		t.Error("a trace recorded twice: no error")
	}

	// Captured: a graph that replays the step on new input.
	c := traceStep(t, d, in, out, words, 9)
	g, err := c.Capture()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	data = randBytes(4, 4*words)
	write(t, in, 0, data)
	if err := g.Replay(); err != nil {
		t.Fatal(err)
	}
	captureStep(t, d, in, ref, words, 9)
	checkBytes(t, "captured trace", read(t, out, 0, int(out.Size())), read(t, ref, 0, int(ref.Size())))

	// Inside a trace, host reads and writes of a buffer a traced command
	// used are refused, and so is the trace's end; other buffers may be
	// read and written (a loader uploading the next batch).
	for name, f := range map[string]func(*vk.Buffer) error{
		"read":  func(b *vk.Buffer) error { return b.Read(0, make([]byte, 4)) },
		"write": func(b *vk.Buffer) error { return b.Write(0, make([]byte, 4)) },
	} {
		if err := d.BeginTrace(); err != nil {
			t.Fatal(err)
		}
		if err := f(in2); err != nil {
			t.Errorf("host %s of a buffer the trace has not used: %v", name, err)
		}
		copy32(t, d, in, ref)
		if err := f(in); !errors.Is(err, vk.ErrCapturing) {
			t.Errorf("host %s of a traced buffer: %v, want ErrCapturing", name, err)
		}
		if tr, err := d.EndTrace(); tr != nil || !errors.Is(err, vk.ErrCapturing) {
			t.Errorf("EndTrace after a refused %s: %v, %v", name, tr, err)
		}
	}
	if err := d.BeginTrace(); err != nil {
		t.Fatal(err)
	}
	if err := d.BeginCapture(); !errors.Is(err, vk.ErrCapturing) {
		t.Errorf("BeginCapture inside a trace: %v", err)
	}
	if err := g.Replay(); !errors.Is(err, vk.ErrCapturing) {
		t.Errorf("Replay inside a trace: %v", err)
	}
	if tr, err := d.EndTrace(); err != nil {
		t.Fatal(err)
	} else {
		tr.Release()
	}
}
