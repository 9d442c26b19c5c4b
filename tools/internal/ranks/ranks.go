// Package ranks opens the data-parallel ranks of a tool's process: one
// device, the devices of -devices over an in-process group, or one rank a
// process under mpirun, and runs a function on each.
package ranks

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/vk"
)

// Rank is one data-parallel rank of this process: its device and group.
type Rank struct {
	D *vk.Device
	G dist.Group
}

// Open opens this process's ranks: under mpirun (OMPI_COMM_WORLD_SIZE set)
// one, on device or on its entry of devices (rank r takes entry r mod
// their number); else one per comma-separated entry of devices over an
// in-process group, or one on device without devices. o's Device is set
// from those; g configures the groups (their collectives' timeout).
func Open(device, devices string, o vk.Options, g dist.Options) ([]Rank, error) {
	names, err := deviceList(devices)
	if err != nil {
		return nil, err
	}
	if os.Getenv("OMPI_COMM_WORLD_SIZE") != "" { // launched by mpirun
		mg, err := dist.NewMPI(g)
		if err != nil {
			return nil, err
		}
		o.Device = device
		if len(names) > 0 {
			o.Device = names[mg.Rank()%len(names)]
		}
		d, err := vk.Open(o)
		if err != nil {
			mg.Close()
			return nil, fmt.Errorf("rank %d: %w", mg.Rank(), err)
		}
		return []Rank{{d, mg}}, nil
	}
	if len(names) == 0 {
		names = []string{device}
	}
	gs := []dist.Group{dist.Single{}}
	if len(names) > 1 {
		gs = dist.NewLocal(len(names), g)
	}
	var rs []Rank
	for i, name := range names {
		o.Device = name
		d, err := vk.Open(o)
		if err != nil {
			Close(rs)
			if devices == "" {
				return nil, err
			}
			return nil, fmt.Errorf("-devices entry %d (%q): %w", i, name, err)
		}
		rs = append(rs, Rank{d, gs[i]})
	}
	return rs, nil
}

// Close closes the ranks' groups and devices.
func Close(rs []Rank) {
	for _, r := range rs {
		r.G.Close()
		r.D.Close()
	}
}

// Run calls f for every rank, one goroutine each, and returns the error
// that caused the others (not the ErrBroken of the ranks it stopped): a
// rank that fails closes its group, so the others fail rather than wait.
func Run(rs []Rank, f func(i int, r Rank) error) error {
	if len(rs) == 1 {
		return f(0, rs[0])
	}
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() {
			if errs[i] = f(i, r); errs[i] != nil {
				r.G.Close()
			}
		})
	}
	wg.Wait()
	first := -1
	for i, err := range errs {
		if err != nil && (first < 0 || errors.Is(errs[first], dist.ErrBroken) && !errors.Is(err, dist.ErrBroken)) {
			first = i
		}
	}
	if first >= 0 {
		return fmt.Errorf("rank %d: %w", first, errs[first])
	}
	return nil
}

// deviceList splits -devices into its entries; an empty entry (",", "0,,1",
// a trailing comma) is an error, not a rank on the default device.
func deviceList(devices string) ([]string, error) {
	if devices == "" {
		return nil, nil
	}
	names := strings.Split(devices, ",")
	for i, n := range names {
		if strings.TrimSpace(n) == "" {
			return nil, fmt.Errorf("-devices %q: entry %d is empty (name a device for each rank, as go run ./tools/vkinfo lists them)", devices, i+1)
		}
	}
	return names, nil
}
