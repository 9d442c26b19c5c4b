package vk_test

import (
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// A captured copy and fill, replayed twice with new input in between.
func ExampleDevice_BeginCapture() {
	d, err := vk.Open(vk.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer d.Close()
	in, _ := d.Alloc(8)
	out, _ := d.Alloc(12)
	defer in.Free()
	defer out.Free()
	if err := d.BeginCapture(); err != nil {
		fmt.Println(err)
		return
	}
	d.Copy(out, 0, in, 0, 8) // captured, not run
	d.Fill(out, 8, 4, 0x2e2e2e2e)
	g, err := d.EndCapture()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	buf := make([]byte, 12)
	for _, s := range []string{"replayed", "AGAIN..."} {
		in.Write(0, []byte(s)) // the data a replay reads
		if err := g.Replay(); err != nil {
			fmt.Println(err)
			return
		}
		out.Read(0, buf)
		fmt.Printf("%s\n", buf)
	}
	// Output:
	// replayed....
	// AGAIN.......
}
