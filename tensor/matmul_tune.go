package tensor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vkamp/vkamp/vk"
)

// Matmul tiles come from a deterministic rule per device (mmPlanFor). An
// optional autotuner (AutotuneMatMul, run by `tools/bench -autotune`, never
// by CI) times the candidate tiles of the kernel the rule picks and stores
// the fastest per problem class in the user's cache directory, one file per
// device UUID and driver version. MatMul then takes the stored tiles. Every
// candidate computes the same values (each output sums its k terms in the
// same order), so tuning changes speed, not results.

// MatMulTuning is a device's tuned tiles.
type MatMulTuning struct {
	// Version is the file's format, mmTuneVersion; ReadMatMulTuning refuses
	// others, so MatMul ignores them and the next autotune rewrites them.
	Version       int          `json:"version"`
	Device        string       `json:"device"`
	DeviceUUID    string       `json:"device_uuid"`
	DriverVersion uint32       `json:"driver_version"`
	Tiles         []MatMulTile `json:"tiles"`
}

// mmTuneVersion is the tuning files' format. Version 1 (no version field)
// stored tiles as specialization constant ids; 2 by name.
const mmTuneVersion = 2

// MatMulTile is the fastest tile of one kernel for one problem class, by
// the names of the kernel's constants (zero where the kernel has none).
type MatMulTile struct {
	Kernel string `json:"kernel"`
	Class  string `json:"class"`        // see mmClass
	WG     int    `json:"wg"`           // invocations per workgroup
	TM     int    `json:"tm"`           // rows of one invocation's tile
	TN     int    `json:"tn"`           // its columns
	BM     int    `json:"bm,omitempty"` // matmul_shared: the workgroup's rows,
	BN     int    `json:"bn,omitempty"` // columns
	BK     int    `json:"bk,omitempty"` // and k step
	// matmul_coop: subgroups along M and N, and the subgroup shape.
	WarpsM int     `json:"warps_m,omitempty"`
	WarpsN int     `json:"warps_n,omitempty"`
	CM     int     `json:"cm,omitempty"`
	CN     int     `json:"cn,omitempty"`
	CK     int     `json:"ck,omitempty"`
	GFLOPS float64 `json:"gflops"`
}

// tile is the stored tile as a plan's.
func (t MatMulTile) tile() mmTile {
	return mmTile{WG: t.WG, TM: t.TM, TN: t.TN, BM: t.BM, BN: t.BN, BK: t.BK,
		WarpsM: t.WarpsM, WarpsN: t.WarpsN, CM: t.CM, CN: t.CN, CK: t.CK}
}

func (t MatMulTile) String() string { return t.tile().String() }

// mmTileOf is the MatMulTile of plan pl's tile (its tunable constants).
func mmTileOf(pl mmPlan) MatMulTile {
	t := pl.tile
	return MatMulTile{Kernel: pl.kind.String(), WG: t.WG, TM: t.TM, TN: t.TN, BM: t.BM, BN: t.BN, BK: t.BK,
		WarpsM: t.WarpsM, WarpsN: t.WarpsN, CM: t.CM, CN: t.CN, CK: t.CK}
}

// String lists the tile's non-zero constants by name.
func (t mmTile) String() string {
	var s []string
	for _, f := range []struct {
		name string
		v    int
	}{{"wg", t.WG}, {"tm", t.TM}, {"tn", t.TN}, {"kk", t.KK}, {"wgx", t.WGX}, {"sg", t.SG},
		{"bm", t.BM}, {"bn", t.BN}, {"bk", t.BK}, {"warps_m", t.WarpsM}, {"warps_n", t.WarpsN},
		{"cm", t.CM}, {"cn", t.CN}, {"ck", t.CK}} {
		if f.v != 0 {
			s = append(s, fmt.Sprintf("%s=%d", f.name, f.v))
		}
	}
	return strings.Join(s, " ")
}

// mmClass names the problems that share a tile: thin ones (M <= 16, a
// batch of a few rows) and the rest, by operand dtypes (bf16 takes fp16's
// tiles: both are 16-bit, read alike).
func mmClass(g mmGeom) string {
	c := "wide"
	if g.m <= 16 {
		c = "thin"
	}
	for _, m := range []uint32{g.aMode, g.bMode} {
		if m == mmModeF32 {
			c += "-f32"
		} else {
			c += "-f16"
		}
	}
	return c
}

// mmTunable reports whether the autotuner tries tiles of kind: the kernels
// the rule gives large problems. Tuning sets WG, TM and TN, for
// matmul_shared BM, BN and BK, and for matmul_coop the whole tile and the
// subgroup shape, over every shape the device lists.
func mmTunable(kind mmKind) bool { return kind == mmTexel || kind == mmShared || kind == mmCoop }

// mmCoopTuneTiles are matmul_coop's candidate workgroup tiles.
var mmCoopTuneTiles = []mmTile{
	{BM: 128, BN: 128, BK: 32, WarpsM: 2, WarpsN: 4}, {BM: 128, BN: 128, BK: 32, WarpsM: 4, WarpsN: 2},
	{BM: 128, BN: 64, BK: 32, WarpsM: 2, WarpsN: 2}, {BM: 64, BN: 128, BK: 32, WarpsM: 2, WarpsN: 2},
	{BM: 64, BN: 64, BK: 32, WarpsM: 2, WarpsN: 2}, {BM: 128, BN: 128, BK: 16, WarpsM: 2, WarpsN: 4},
	{BM: 64, BN: 64, BK: 16, WarpsM: 2, WarpsN: 2}, {BM: 64, BN: 64, BK: 32, WarpsM: 1, WarpsN: 2},
}

// mmCandidates are the tiles the autotuner tries for kind, valid on the
// device.
func mmCandidates(info vk.Info, kind mmKind) []mmTile {
	maxInv := int(min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0]))
	var cs []mmTile
	switch kind {
	case mmTexel:
		for _, tn := range []int{8, 16} {
			for _, wg := range []int{8, 16, 32} {
				for _, tm := range []int{8, 16, 24, 32} {
					if wg <= maxInv {
						cs = append(cs, mmTile{WG: wg, TM: tm, TN: tn})
					}
				}
			}
		}
	case mmCoop:
		g := mmGeom{batch: 1, m: 1024, n: 1024, k: 1024, aMode: mmModeF16, bMode: mmModeF16}
		for _, shape := range mmCoopShapes(info, false) {
			for _, t := range mmCoopTuneTiles {
				if pl, ok := mmCoopPlanTile(info, g, t, shape, mmCoop, int(info.SubgroupSize)); ok {
					pl.tile.SG = 0 // WG / (WarpsM * WarpsN): not stored
					cs = append(cs, pl.tile)
				}
			}
		}
	case mmShared:
		for _, t := range []mmTile{
			{BM: 64, BN: 64, BK: 16, TM: 4, TN: 4}, {BM: 64, BN: 64, BK: 32, TM: 4, TN: 4},
			{BM: 32, BN: 32, BK: 16, TM: 4, TN: 4}, {BM: 128, BN: 64, BK: 16, TM: 8, TN: 4},
			{BM: 128, BN: 128, BK: 16, TM: 8, TN: 8}, {BM: 128, BN: 128, BK: 32, TM: 8, TN: 8},
		} {
			t.WG = (t.BM / t.TM) * (t.BN / t.TN)
			if t.WG <= maxInv && 4*t.BK*(t.BM+t.BN) <= int(info.MaxSharedMemory) {
				cs = append(cs, t)
			}
		}
	}
	return cs
}

// withTile returns pl with the tuned constants of t.
func (pl mmPlan) withTile(t mmTile) mmPlan {
	pl.tile.WG, pl.tile.TM, pl.tile.TN = t.WG, t.TM, t.TN
	if pl.kind == mmShared {
		pl.tile.BM, pl.tile.BN, pl.tile.BK = t.BM, t.BN, t.BK
	}
	if pl.kind == mmCoop {
		pl.tile = t
		pl.tile.SG = t.WG / (t.WarpsM * t.WarpsN)
	}
	return pl
}

// mmTuned returns the tuned tile for the plan's kernel and class on this
// device, if the autotuner stored one.
func mmTuned(d *vk.Device, pl mmPlan, g mmGeom) (mmTile, bool) {
	on, dir := d.Tuning()
	if pl.dyn || !mmTunable(pl.kind) || !on {
		return mmTile{}, false
	}
	info := d.Info()
	t := mmTunings.get(mmTunePath(info, dir))
	if t == nil {
		return mmTile{}, false
	}
	class := mmClass(g)
	for _, tile := range t.Tiles {
		// Checked against today's candidates, so that an edited or stale
		// file cannot ask for a tile the device cannot run.
		if tile.Kernel == pl.kind.String() && tile.Class == class && slices.Contains(mmCandidates(info, pl.kind), tile.tile()) {
			return tile.tile(), true
		}
	}
	return mmTile{}, false
}

// mmTuneFile is where the tuning of this device and driver lives, under dir
// or else the user's cache directory (MatMul looks under the device's
// Tuning directory if set).
func mmTuneFile(info vk.Info, dir string) string {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "vkamp")
	}
	id := info.DeviceUUID
	if id == "" {
		id = info.CacheUUID
	}
	return filepath.Join(dir, fmt.Sprintf("matmul-tiles-%s-%d.json", id, info.DriverVersion))
}

// mmTunePath is mmTuneFile under dir, remembered: MatMul asks on every
// call, and building the path cost more than the launch. The key holds the
// environment the path depends on (os.UserCacheDir reads XDG_CACHE_HOME or
// HOME), so a changed variable is seen.
func mmTunePath(info vk.Info, dir string) string {
	k := mmPathKey{dir, os.Getenv("XDG_CACHE_HOME"), os.Getenv("HOME"),
		info.DeviceUUID, info.CacheUUID, info.DriverVersion}
	mmPaths.mu.Lock()
	defer mmPaths.mu.Unlock()
	p, ok := mmPaths.m[k]
	if !ok {
		p = mmTuneFile(info, k.dir)
		mmPaths.m[k] = p
	}
	return p
}

type mmPathKey struct {
	dir, xdg, home, uuid, cache string
	driver                      uint32
}

var mmPaths = struct {
	mu sync.Mutex
	m  map[mmPathKey]string
}{m: map[mmPathKey]string{}}

// mmTunings caches tuning files by path; a missing or unreadable file is
// cached as nil (no tuning), once per process.
var mmTunings = tuningCache{m: map[string]*MatMulTuning{}}

type tuningCache struct {
	mu sync.Mutex
	m  map[string]*MatMulTuning
}

func (c *tuningCache) get(path string) *MatMulTuning {
	if path == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.m[path]; ok {
		return t
	}
	t, _ := ReadMatMulTuning(path)
	c.m[path] = t
	return t
}

func (c *tuningCache) put(path string, t *MatMulTuning) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[path] = t
}

// ReadMatMulTuning reads a tuning file. A missing file is (nil, nil); a
// file of another format version (an older vkamp's) is an error.
func ReadMatMulTuning(path string) (*MatMulTuning, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var t MatMulTuning
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("tensor: matmul tuning %s: %w", path, err)
	}
	if t.Version != mmTuneVersion {
		return nil, fmt.Errorf("tensor: matmul tuning %s: format version %d, want %d (run tools/bench -autotune again)", path, t.Version, mmTuneVersion)
	}
	return &t, nil
}

// AutotuneOptions configures AutotuneMatMul.
type AutotuneOptions struct {
	Dir     string        // where to store the result; "" is the device's (vk.Options.TuneDir, VKAMP_TUNE_DIR), else the user's cache directory
	Size    int           // M of wide problems, and N and K of all; 0 means 1024
	MinTime time.Duration // per candidate; 0 means 300 ms
	Log     func(string)  // progress, if set
	// MaxCandidates, if positive, tries only the first few tiles of each
	// class (for tests).
	MaxCandidates int
}

// AutotuneMatMul times every candidate tile of the kernel the rule picks for
// wide and thin problems in fp16 and fp32 on d, stores the fastest of each
// class in the device's tuning file and returns its path. MatMul uses the
// stored tiles from then on, in this process and later ones (a device
// opened with vk.Options.NoTune or VKAMP_TUNE=off ignores them). It never runs on its own: CI runs the rule. A directory
// that cannot be created or written is an error before anything is timed.
func AutotuneMatMul(d *vk.Device, o AutotuneOptions) (string, *MatMulTuning, error) {
	if o.Size <= 0 {
		o.Size = 1024
	}
	if o.MinTime <= 0 {
		o.MinTime = 300 * time.Millisecond
	}
	info := d.Info()
	from := "AutotuneOptions.Dir"
	if o.Dir == "" {
		_, o.Dir = d.Tuning()
		from = "the device's TuneDir (vk.Options.TuneDir or VKAMP_TUNE_DIR)"
	}
	if o.Dir == "" {
		from = "the user's cache directory"
	}
	path := mmTuneFile(info, o.Dir)
	if path == "" {
		return "", nil, errors.New("tensor: autotune: no cache directory (set AutotuneOptions.Dir or VKAMP_TUNE_DIR)")
	}
	// Before any timing: tuning takes minutes, and its result must land.
	if err := checkWritableDir(filepath.Dir(path)); err != nil {
		return "", nil, fmt.Errorf("tensor: autotune: cannot write the tuning directory %s (%s): %w", filepath.Dir(path), from, err)
	}
	t := &MatMulTuning{Version: mmTuneVersion, Device: info.Name, DeviceUUID: info.DeviceUUID, DriverVersion: info.DriverVersion}
	n := o.Size
	for _, m := range []int{n, 16} {
		for _, dt := range []DType{Float16, Float32} {
			tile, err := mmTuneClass(d, m, n, dt, o)
			if err != nil {
				return "", nil, err
			}
			if tile != nil {
				t.Tiles = append(t.Tiles, *tile)
			}
		}
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return "", nil, err
	}
	if err := writeFileAtomic(path, append(b, '\n')); err != nil {
		return "", nil, fmt.Errorf("tensor: autotune: %w", err)
	}
	mmTunings.put(path, t)
	return path, t, nil
}

// mmTuneClass times the candidates for an m x n x n problem of dtype dt.
func mmTuneClass(d *vk.Device, m, n int, dt DType, o AutotuneOptions) (*MatMulTile, error) {
	a, b := Full(d, dt, 0.5, m, n), Full(d, dt, 0.25, n, n)
	defer a.Release()
	defer b.Release()
	g := mmShapes(a, b, MatMulOpts{})
	g, pl, err := mmChooseRule(d.Info(), a, b, g)
	if err != nil {
		return nil, err
	}
	cands := mmCandidates(d.Info(), pl.kind)
	if o.MaxCandidates > 0 && len(cands) > o.MaxCandidates {
		cands = cands[:o.MaxCandidates]
	}
	if len(cands) == 0 {
		return nil, nil
	}
	var best *MatMulTile
	for _, c := range cands {
		p := pl.withTile(c)
		gflops, err := mmTime(d, a, b, g, p, o.MinTime)
		if err != nil {
			return nil, err
		}
		if o.Log != nil {
			o.Log(fmt.Sprintf("%s %s {%v}: %.1f GFLOP/s", mmClass(g), pl.kind, c, gflops))
		}
		if best == nil || gflops > best.GFLOPS {
			t := mmTileOf(p)
			t.Class, t.GFLOPS = mmClass(g), gflops
			best = &t
		}
	}
	return best, nil
}

// mmTime runs plan p on a and b until minTime has passed (after one run
// that builds the pipeline) and returns GFLOP/s.
func mmTime(d *vk.Device, a, b *Tensor, g mmGeom, p mmPlan, minTime time.Duration) (float64, error) {
	run := func() error {
		out := New(d, Float32, g.m, g.n)
		defer out.Release()
		mmCall{a: a, b: b, alpha: 1, g: g}.launch(out, p)
		if err := d.Wait(); err != nil {
			return err
		}
		return out.Err()
	}
	if err := run(); err != nil {
		return 0, err
	}
	start, runs := time.Now(), 0
	for time.Since(start) < minTime || runs < 2 {
		if err := run(); err != nil {
			return 0, err
		}
		runs++
	}
	return 2 * float64(g.madds()) * float64(runs) / time.Since(start).Seconds() / 1e9, nil
}

// checkWritableDir creates dir if needed and checks that a file can be
// created in it (and removes that file).
func checkWritableDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".vkamp-write-check*")
	if err != nil {
		return err
	}
	return errors.Join(f.Close(), os.Remove(f.Name()))
}

// writeFileAtomic writes through a temporary file in the same directory, so
// that a reader never sees half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
