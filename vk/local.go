//go:build cgo

package vk

// Local returns the value the device keeps under key for a package above
// vk, calling create to make it on the first call with that key (tensor keeps
// its device-side assert flag so). The value lives as long as the Device;
// what it owns on the device goes with Close like every buffer. create runs
// without the device's lock held, so it may allocate and record work, but it
// must not call Local. Local is safe for concurrent use.
func (d *Device) Local(key any, create func() any) any {
	d.localMu.Lock()
	defer d.localMu.Unlock()
	if v, ok := d.locals[key]; ok {
		return v
	}
	if d.locals == nil {
		d.locals = map[any]any{}
	}
	v := create()
	d.locals[key] = v
	return v
}
