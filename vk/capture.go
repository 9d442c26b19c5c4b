//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import "fmt"

// A Graph is a captured command sequence, as CUDA graphs are: the
// dispatches, copies, fills and barriers recorded between BeginCapture and
// EndCapture go into secondary command buffers that Replay executes again
// with one command, in order with the work recorded around it. The buffers
// keep their memory: a replay reads and writes the same bytes, so data that
// changes between replays is written into the captured buffers before each
// Replay (Buffer.Write, Copy). Push constants are captured as values.
//
// Capturing records without running: nothing captured runs until the first
// Replay. While capturing, host reads and writes of buffers return
// ErrCapturing (their effect could not be replayed), and a buffer the
// capture uses that is freed during the capture is kept until Graph.Close,
// so that a step's temporaries stay the graph's. A buffer the graph uses that
// is freed after the capture makes Replay return ErrStaleGraph.
type Graph struct {
	d          *Device
	cmds       []C.VkCommandBuffer
	secs       []C.vkamp_slot
	bufs       []*Buffer // every buffer the capture used, in first-use order
	writes     []bool    // whether the capture wrote it
	index      map[*Buffer]int
	roots      map[*Buffer]bool // the roots of bufs, whose Free is held
	held       []*Buffer        // freed during the capture: freed on Close
	views      []*texelView     // texel views the capture bound, pinned
	dispatches int
	copies     int
	lastUse    uint64 // serial of the last batch that replayed it
	aliveAt    uint64 // Device.frees+1 when its buffers were last found alive; 0: never
	timestamps bool   // the device's setting, restored by EndCapture
	err        error  // the first thing refused during the capture
	closed     bool
}

// Capturing reports whether a capture is open: what is recorded now goes
// into its graph, and host reads and writes of buffers are refused.
func (d *Device) Capturing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.capture != nil
}

// BeginCapture submits the work recorded so far and starts capturing: the
// dispatches, copies and fills recorded from here to EndCapture, by any
// caller, go into the graph instead of running. Kernel timestamps are not
// taken inside a graph.
func (d *Device) BeginCapture() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.beginCaptureLocked()
}

// beginCaptureLocked is BeginCapture with the device lock held.
func (d *Device) beginCaptureLocked() error {
	if err := d.usable(); err != nil {
		return err
	}
	if d.capture != nil || d.trace != nil {
		return fmt.Errorf("vk: begin capture: %w: a capture or trace is already open", ErrCapturing)
	}
	if err := d.submit(); err != nil {
		return err
	}
	g := &Graph{d: d, index: map[*Buffer]int{}, roots: map[*Buffer]bool{}, timestamps: d.timestamps}
	if err := g.grow(); err != nil {
		g.destroy()
		return err
	}
	// The replay starts with a barrier: the capture owes nothing to the
	// work recorded before it.
	d.hz.clear()
	d.timestamps = false
	d.capture = g
	return nil
}

// grow ends the secondary command buffer being recorded, if any, and starts
// the next one as the device's current batch. submit calls it while
// capturing, when the batch is full or a caller asked for a submission.
func (g *Graph) grow() error {
	d := g.d
	if n := len(g.secs); n > 0 {
		if err := check(int32(C.vkamp_end_secondary(&g.secs[n-1])), "end a captured command buffer"); err != nil {
			return d.fail(err)
		}
	}
	var c C.vkamp_slot
	// Captured dispatches bind as the batch's do: a kernel's set layout is
	// a push-descriptor layout where the device has the extension.
	r := C.vkamp_create_secondary(d.dev, C.uint32_t(d.info.drv.queueFamily), C.uint32_t(d.batchSize),
		C.uint32_t(d.batchSize*maxBindings), cbool(d.info.PushDescriptors), &c)
	if err := check(int32(r), "create a captured command buffer"); err != nil {
		return d.fail(err)
	}
	g.secs = append(g.secs, c)
	g.cmds = append(g.cmds, c.cmd)
	// The serial is the last one handed out, so that marking a buffer used
	// by the capture never moves its last use back.
	d.cur = &slot{c: c, serial: d.lastSerial, recording: true}
	return nil
}

// captureSubmit is submit while capturing: the current command buffer is
// closed and the next one begun; nothing is sent.
func (d *Device) captureSubmit() error {
	s := d.cur
	if s == nil || s.commands == 0 {
		return nil
	}
	g := d.capture
	g.dispatches += s.dispatches
	g.copies += s.commands - s.dispatches
	return g.grow()
}

// captured notes the buffers one captured command uses.
func (g *Graph) captured(reads, writes []*Buffer) {
	for i, list := range [2][]*Buffer{reads, writes} {
		for _, b := range list {
			j, ok := g.index[b]
			if !ok {
				j = len(g.bufs)
				g.index[b] = j
				g.bufs = append(g.bufs, b)
				g.writes = append(g.writes, false)
				g.roots[b.root()] = true
			}
			g.writes[j] = g.writes[j] || i == 1
		}
	}
}

// hold reports whether the capture keeps b, which is being freed: its
// memory stays the graph's until Close.
func (g *Graph) hold(b *Buffer) bool {
	if _, used := g.index[b]; !used && !g.roots[b] {
		return false
	}
	g.held = append(g.held, b)
	return true
}

// refuse returns err, remembering the first for EndCapture: a refused read
// or write may hide in a tensor's error, and the graph would lack its work.
func (g *Graph) refuse(err error) error {
	if g.err == nil {
		g.err = err
	}
	return err
}

// RefuseCapture makes the open capture fail with err, as a host read or
// write of a buffer does, for what a replay would not repeat that vk cannot
// see: a value drawn on the host and recorded as a push constant (nn's
// dropout seed). EndCapture closes the graph and returns the first refusal.
// RefuseCapture returns err while a capture is open, nil otherwise.
func (d *Device) RefuseCapture(err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.capture == nil {
		return nil
	}
	return d.capture.refuse(err)
}

// pin keeps a texel view the capture binds from being destroyed to make
// room for others while the graph lives.
func (g *Graph) pin(tv *texelView) {
	for _, v := range g.views {
		if v == tv {
			return
		}
	}
	tv.pins++
	g.views = append(g.views, tv)
}

// EndCapture ends the capture and returns its graph. It records nothing
// that runs: call Replay to run the graph, and Close to release it. If
// something was refused during the capture (a host read or write), the
// graph is closed and the first refusal returned.
func (d *Device) EndCapture() (*Graph, error) {
	d.mu.Lock()
	g, err := d.endCaptureLocked()
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if g.err != nil {
		g.Close()
		return nil, g.err
	}
	return g, nil
}

// endCaptureLocked ends the capture with the device lock held; the caller
// closes the graph if g.err says something was refused.
func (d *Device) endCaptureLocked() (*Graph, error) {
	g := d.capture
	if g == nil {
		return nil, fmt.Errorf("vk: end capture: %w: no capture is open", ErrInvalidArgument)
	}
	s := d.cur
	g.dispatches += s.dispatches
	g.copies += s.commands - s.dispatches
	d.capture, d.cur = nil, nil
	d.timestamps = g.timestamps
	d.hz.clear()
	n := len(g.secs)
	if err := check(int32(C.vkamp_end_secondary(&g.secs[n-1])), "end a captured command buffer"); err != nil {
		g.destroy()
		return nil, d.fail(err)
	}
	d.graphs = append(d.graphs, g)
	return g, nil
}

// Stale reports whether Replay would return ErrStaleGraph: the graph was
// closed, or a buffer it uses was freed.
func (g *Graph) Stale() bool {
	d := g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if g.closed {
		return true
	}
	if g.aliveAt != d.frees+1 {
		for _, b := range g.bufs {
			if b.dead() {
				return true
			}
		}
		g.aliveAt = d.frees + 1
	}
	return false
}

// Dispatches is the number of kernel launches a replay runs.
func (g *Graph) Dispatches() int { return g.dispatches }

// Copies is the number of copies and fills a replay runs.
func (g *Graph) Copies() int { return g.copies }

// Replay records the graph's commands once more, after the work recorded
// before it and before the work recorded after it, without waiting. It
// returns ErrStaleGraph if a buffer the graph uses was freed or the graph
// was closed, and ErrCapturing while a capture is open.
func (g *Graph) Replay() error {
	d := g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	if g.closed {
		return fmt.Errorf("vk: replay: %w: the graph was closed", ErrStaleGraph)
	}
	if d.capture != nil || d.trace != nil {
		return fmt.Errorf("vk: replay: %w: replaying inside a capture or trace", ErrCapturing)
	}
	// The buffers are looked at again only when something was freed since
	// they were last found alive: most replays follow a replay.
	if g.aliveAt != d.frees+1 {
		for i, b := range g.bufs {
			if b.dead() {
				return fmt.Errorf("vk: replay: %w: buffer %d of %d (%d bytes) the graph uses was freed", ErrStaleGraph, i, len(g.bufs), b.size)
			}
		}
		g.aliveAt = d.frees + 1
	}
	if len(g.cmds) == 0 {
		return nil
	}
	s, err := d.begin()
	if err != nil {
		return err
	}
	// Barriers on both sides instead of tracking the graph's accesses: a
	// step is long, and its first and last commands depend on its
	// neighbours anyway.
	C.vkamp_cmd_replay(&s.c, C.uint32_t(len(g.cmds)), &g.cmds[0])
	d.stats.Barriers += 2
	d.hz.clear()
	for i, b := range g.bufs {
		b.markUse(s.serial, g.writes[i])
	}
	g.lastUse = s.serial
	s.commands++
	s.dispatches += g.dispatches
	if s.dispatches >= d.batchSize {
		return d.submit()
	}
	return nil
}

// Close waits until no replay of the graph is pending, then destroys its
// command buffers and frees the buffers freed during the capture. It is
// idempotent and safe after the device closed.
func (g *Graph) Close() error {
	if g == nil {
		return nil
	}
	d := g.d
	d.mu.Lock()
	if g.closed {
		d.mu.Unlock()
		return nil
	}
	g.closed = true
	var err error
	if d.usable() == nil {
		err = d.waitSerial(g.lastUse)
	}
	// After a device loss the command buffers may still be pending: the
	// device's Close destroys them after waiting for idle.
	if d.usable() == nil {
		g.destroy()
		for i, x := range d.graphs {
			if x == g {
				d.graphs = append(d.graphs[:i], d.graphs[i+1:]...)
				break
			}
		}
	}
	for _, tv := range g.views {
		tv.pins--
	}
	held := g.held
	g.held, g.views, g.bufs, g.index, g.roots = nil, nil, nil, nil, nil
	d.mu.Unlock()
	for _, b := range held {
		b.Free()
	}
	return err
}

// destroy destroys the graph's command buffers; the device lock is held.
func (g *Graph) destroy() {
	for i := range g.secs {
		C.vkamp_destroy_slot(g.d.dev, &g.secs[i])
	}
	g.secs, g.cmds = nil, nil
}
