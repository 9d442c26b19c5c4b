package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tools/internal/report"
	"github.com/vkamp/vkamp/vk"
)

// rank is one data-parallel rank of this process: its device and group.
type rank struct {
	d *vk.Device
	g dist.Group
}

// openRanks opens this process's ranks: one under mpirun (or without
// -devices), else one per entry of -devices over an in-process group.
func openRanks(c config) ([]rank, error) {
	var names []string
	if c.devices != "" {
		names = strings.Split(c.devices, ",")
	}
	if os.Getenv("OMPI_COMM_WORLD_SIZE") != "" { // launched by mpirun
		g, err := dist.NewMPI(dist.Options{})
		if err != nil {
			return nil, err
		}
		name := c.device
		if len(names) > 0 {
			name = names[g.Rank()%len(names)]
		}
		d, err := vk.Open(vk.Options{Device: name})
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("rank %d: %w", g.Rank(), err)
		}
		return []rank{{d, g}}, nil
	}
	if len(names) == 0 {
		names = []string{c.device}
	}
	gs := []dist.Group{dist.Single{}}
	if len(names) > 1 {
		gs = dist.NewLocal(len(names), dist.Options{})
	}
	var ranks []rank
	for i, name := range names {
		d, err := vk.Open(vk.Options{Device: name})
		if err != nil {
			closeRanks(ranks)
			return nil, fmt.Errorf("-devices entry %d (%q): %w", i, name, err)
		}
		ranks = append(ranks, rank{d, gs[i]})
	}
	return ranks, nil
}

func closeRanks(ranks []rank) {
	for _, r := range ranks {
		r.g.Close()
		r.d.Close()
	}
}

// trainRanks runs trainRun on every rank of this process, one goroutine
// each, and returns the first rank's history; only it writes to out, bars
// and jsonw. A rank that fails closes its group, so the others fail rather
// than wait for it.
func trainRanks(ctx context.Context, c config, ranks []rank, train, test *mnist.Set, precision string, out, bars, jsonw io.Writer) (report.Run, error) {
	if len(ranks) == 1 {
		return trainRun(ctx, c, ranks[0].d, ranks[0].g, train, test, precision, out, bars, jsonw)
	}
	runs := make([]report.Run, len(ranks))
	errs := make([]error, len(ranks))
	var wg sync.WaitGroup
	for i, r := range ranks {
		wg.Go(func() {
			o, b, j := out, bars, jsonw
			if i > 0 {
				o, b, j = io.Discard, io.Discard, nil
			}
			runs[i], errs[i] = trainRun(ctx, c, r.d, r.g, train, test, precision, o, b, j)
			if errs[i] != nil {
				r.g.Close()
			}
		})
	}
	wg.Wait()
	first := -1 // the cause, rather than the ranks it broke
	for i, err := range errs {
		if err != nil && (first < 0 || errors.Is(errs[first], dist.ErrBroken) && !errors.Is(err, dist.ErrBroken)) {
			first = i
		}
	}
	if first >= 0 {
		return runs[0], fmt.Errorf("rank %d: %w", first, errs[first])
	}
	return runs[0], nil
}
