package tensor

import "github.com/vkamp/vkamp/vk"

// WithoutTables runs f with the unary ops' tables off (tables.go), so that
// tests compare them with the kernels they stand for.
func WithoutTables(f func()) {
	tablesOff = true
	defer func() { tablesOff = false }()
	f()
}

// HasTable reports whether d has made op's table from in to out.
func HasTable(d *vk.Device, op string, in, out DType) bool {
	ot := d.Local(tableKey{op, in, out}, func() any { return &opTable{} }).(*opTable)
	ot.mu.Lock()
	defer ot.mu.Unlock()
	return ot.t != nil
}

// TexelsDevice reports whether the texel forms serve d.
func TexelsDevice(d *vk.Device) bool { return texelsDevice(d) }
