package tensor_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestAutotune runs the autotuner briefly on small problems into a temporary
// directory, then checks that MatMul takes the stored tile from there, that
// it still computes the right values, that the file stores tiles by name
// under a format version, and that a corrupt file is an error.
func TestAutotune(t *testing.T) {
	t.Setenv("VKAMP_MATMUL", "")
	dir := t.TempDir()
	d := devtest.Open(t, vk.Options{TuneDir: dir})
	path, tuning, err := tensor.AutotuneMatMul(d, tensor.AutotuneOptions{Size: 128, MinTime: time.Millisecond, MaxCandidates: 3, Log: func(s string) { t.Log(s) }})
	require.NoError(t, err)
	require.Equal(t, dir, filepath.Dir(path), "tuning written outside Options.TuneDir")
	got, err := tensor.ReadMatMulTuning(path)
	require.NoError(t, err)
	require.Equal(t, tuning, got, "read back")
	a := mmUpload(t, d, make([]float32, 128*128), mmF16, 128, 128)
	tile, err := tensor.MatMulTileOf(d, a, a, tensor.MatMulOpts{})
	require.NoError(t, err)
	for _, tuned := range tuning.Tiles {
		if tuned.Class == "wide-f16-f16" {
			tuned.Class, tuned.GFLOPS = "", 0
			require.Equal(t, tuned, tile, "MatMul does not run the tuned tile")
		}
	}
	if len(tuning.Tiles) == 0 {
		t.Logf("%s has no tunable matmul kernel", d.Info().Name)
	}
	mmRunAll(t, d, []mmCase{{m: 128, n: 128, k: 128, da: mmF16, db: mmF16, out: mmF16}, {m: 16, n: 128, k: 128, da: mmF32, db: mmF32, out: mmF32}})

	// The file stores tiles by name, under a version.
	var probe struct {
		Version int              `json:"version"`
		Tiles   []map[string]any `json:"tiles"`
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &probe), "tuning file is not JSON")
	require.Equal(t, 2, probe.Version)
	for _, tile := range probe.Tiles {
		require.Contains(t, tile, "wg")
		require.NotContains(t, tile, "spec")
	}

	// A corrupt file is an error for the reader and no tuning for MatMul.
	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{"), 0o644))
	_, err = tensor.ReadMatMulTuning(bad)
	require.Error(t, err, "corrupt tuning file")
}

// TestAutotuneFile checks the tuning file without timing anything, on
// matmul_shared (which every device runs): a file of the old format (tiles
// as specialization constant ids, no version) is ignored, not misread; a
// file of today's format written by hand is read back and MatMul runs its
// tile and still computes the right values; VKAMP_TUNE=off ignores it.
func TestAutotuneFile(t *testing.T) {
	t.Setenv("VKAMP_TUNE", "")
	t.Setenv("VKAMP_TUNE_DIR", "")
	info := devtest.Open(t).Info()
	open := func(o vk.Options) *vk.Device {
		t.Helper()
		o.Matmul = "shared"
		return devtest.Open(t, o)
	}
	tileOf := func(o vk.Options) tensor.MatMulTile {
		t.Helper()
		d := open(o)
		a := mmUpload(t, d, make([]float32, 128*128), mmF16, 128, 128)
		tile, err := tensor.MatMulTileOf(d, a, a, tensor.MatMulOpts{})
		require.NoError(t, err)
		return tile
	}
	rule := tileOf(vk.Options{NoTune: true})
	var pick tensor.MatMulTile // a valid tile other than the rule's
	for _, c := range tensor.MatMulCandidates(info, "matmul_shared") {
		if c != rule {
			pick = c
			break
		}
	}
	if pick.WG == 0 {
		t.Skipf("%s: matmul_shared has no candidate tile besides the rule's %v", info.Name, rule)
	}
	pick.Class = "wide-f16-f16"
	write := func(dir, body string) string { // a directory per file: MatMul caches what it read per path
		t.Helper()
		path := tensor.MatMulTuneFile(info, dir)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	head := fmt.Sprintf(`"device": %q, "device_uuid": %q, "driver_version": %d`, info.Name, info.DeviceUUID, info.DriverVersion)

	// Version 1 stored the same tile by constant ids.
	oldDir := t.TempDir()
	old := write(oldDir, fmt.Sprintf(`{%s, "tiles": [{"kernel": "matmul_shared", "class": %q,
		"spec": {"0": %d, "1": %d, "2": %d, "10": %d, "11": %d, "12": %d}, "gflops": 1}]}`,
		head, pick.Class, pick.WG, pick.TM, pick.TN, pick.BM, pick.BN, pick.BK))
	_, err := tensor.ReadMatMulTuning(old)
	require.ErrorContains(t, err, "version")
	require.Equal(t, rule, tileOf(vk.Options{TuneDir: oldDir}), "an old-format file changed MatMul's tile")

	dir := t.TempDir()
	path := write(dir, fmt.Sprintf(`{"version": 2, %s, "tiles": [{"kernel": "matmul_shared", "class": %q,
		"wg": %d, "tm": %d, "tn": %d, "bm": %d, "bn": %d, "bk": %d, "gflops": 1}]}`,
		head, pick.Class, pick.WG, pick.TM, pick.TN, pick.BM, pick.BN, pick.BK))
	got, err := tensor.ReadMatMulTuning(path)
	require.NoError(t, err)
	require.Len(t, got.Tiles, 1)
	require.Equal(t, 1.0, got.Tiles[0].GFLOPS)
	got.Tiles[0].GFLOPS = 0
	require.Equal(t, pick, got.Tiles[0])
	want := pick
	want.Class = ""
	require.Equal(t, want, tileOf(vk.Options{TuneDir: dir}), "MatMul does not run the stored tile")
	require.True(t, strings.Contains(pick.String(), fmt.Sprintf("bm=%d", pick.BM)), pick.String())
	mmRunAll(t, open(vk.Options{TuneDir: dir}), []mmCase{{m: 128, n: 128, k: 72, da: mmF16, db: mmF16, out: mmF16, bias: true, dbias: mmF32},
		{m: 130, n: 66, k: 40, da: mmF16, db: mmF16, out: mmF32, transA: true, alpha: 2, beta: 0.5, dc: mmF16}})
	require.Equal(t, rule, tileOf(vk.Options{TuneDir: dir, NoTune: true}), "Options.NoTune")

	// The environment sets the same options where the code does not.
	t.Setenv("VKAMP_TUNE_DIR", dir)
	require.Equal(t, want, tileOf(vk.Options{}), "VKAMP_TUNE_DIR")
	t.Setenv("VKAMP_TUNE", "off")
	require.Equal(t, rule, tileOf(vk.Options{}), "VKAMP_TUNE=off")
}

// TestAutotuneUnwritableDir checks that the autotuner refuses a tuning
// directory it cannot write before it times anything (it used to time for
// minutes and fail at the end), naming the directory, wherever the
// directory came from. The directory lies under a regular file, so that no
// one can create it, root included.
func TestAutotuneUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	t.Setenv("VKAMP_MATMUL", "")
	for _, c := range []struct {
		name, optDir, env, xdg string
		want                   string // the directory the error names
	}{
		{name: "Dir", optDir: filepath.Join(file, "opt"), want: filepath.Join(file, "opt")},
		{name: "VKAMP_TUNE_DIR", env: filepath.Join(file, "env"), want: filepath.Join(file, "env")},
		{name: "user cache dir", xdg: file, want: filepath.Join(file, "vkamp")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("VKAMP_TUNE_DIR", c.env)
			if c.xdg != "" {
				t.Setenv("XDG_CACHE_HOME", c.xdg)
				t.Setenv("HOME", c.xdg)
			}
			d := devtest.Open(t) // after the environment: Open reads it
			var timed []string
			_, _, err := tensor.AutotuneMatMul(d, tensor.AutotuneOptions{Dir: c.optDir, Size: 128, MinTime: 10 * time.Millisecond, MaxCandidates: 1,
				Log: func(s string) { timed = append(timed, s) }})
			require.Error(t, err)
			t.Log(err)
			require.Empty(t, timed, "timed tiles before finding the directory unwritable")
			require.Contains(t, err.Error(), c.want)
		})
	}
}
