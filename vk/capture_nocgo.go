//go:build !cgo

package vk

// Graph is a captured command sequence; without cgo none can be made.
type Graph struct{}

func (d *Device) BeginCapture() error         { return errNoCgo }
func (d *Device) EndCapture() (*Graph, error) { return nil, errNoCgo }
func (d *Device) RefuseCapture(error) error   { return nil }
func (d *Device) Capturing() bool             { return false }
func (g *Graph) Dispatches() int              { return 0 }
func (g *Graph) Copies() int                  { return 0 }
func (g *Graph) Replay() error                { return errNoCgo }
func (g *Graph) Close() error                 { return nil }
func (d *Device) Reaches([]*Buffer)           {}

// Trace describes traced work; without cgo none can be made.
type Trace struct{}

func (d *Device) BeginTrace() error         { return errNoCgo }
func (d *Device) EndTrace() (*Trace, error) { return nil, errNoCgo }
func (d *Device) Tracing() bool             { return false }
func (t *Trace) Dispatches() int            { return 0 }
func (t *Trace) Sum() uint64                { return 0 }
func (t *Trace) Same(*Trace) bool           { return false }
func (t *Trace) Record() error              { return errNoCgo }
func (t *Trace) Capture() (*Graph, error)   { return nil, errNoCgo }
func (t *Trace) Release()                   {}
func (g *Graph) Stale() bool                { return true }
