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
func (g *Graph) OutsideWrite() uint64         { return 0 }
func (d *Device) Reaches([]*Buffer)           {}
func (d *Device) HostWrites() uint64          { return 0 }
