package main

import "testing"

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"IN0_DT": "In0DT", "TRANS_A": "TransA", "A_MODE": "AMode", "NO_X": "NoX", "DYN": "Dyn",
		"WARPS_M": "WarpsM", "S": "S", "TM": "TM", "WGX": "WGX", "n": "N", "nchunks": "Nchunks",
		"min_scale": "MinScale", "batchA": "BatchA", "LocalSizeX": "LocalSizeX", "BufOut": "BufOut",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}
