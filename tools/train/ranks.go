package main

import (
	"context"
	"io"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tools/internal/ranks"
	"github.com/vkamp/vkamp/tools/internal/report"
)

// trainRanks runs trainRun on every rank of this process and returns the
// first rank's history; only it writes to out, bars and jsonw.
func trainRanks(ctx context.Context, c config, rs []ranks.Rank, train, test *mnist.Set, precision string, out, bars, jsonw io.Writer) (report.Run, error) {
	runs := make([]report.Run, len(rs))
	err := ranks.Run(rs, func(i int, r ranks.Rank) error {
		o, b, j := out, bars, jsonw
		if i > 0 {
			o, b, j = io.Discard, io.Discard, nil
		}
		var err error
		runs[i], err = trainRun(ctx, c, r.D, r.G, train, test, precision, o, b, j)
		return err
	})
	return runs[0], err
}
