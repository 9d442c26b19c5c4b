package vk_test

import (
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// A buffer written by the host, filled by the device, and read back.
func Example() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	b, err := d.Alloc(16)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Free()
	b.Write(0, []byte("0123456789abcdef"))
	d.Fill(b, 4, 8, 0x2a2a2a2a) // recorded, not yet run
	out := make([]byte, 16)
	if err := b.Read(0, out); err != nil { // waits for the fill
		fmt.Println(err)
		return
	}
	fmt.Printf("%s\n", out)
	// Output: 0123********cdef
}
