package tensor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
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
	Device        string       `json:"device"`
	DeviceUUID    string       `json:"device_uuid"`
	DriverVersion uint32       `json:"driver_version"`
	Tiles         []MatMulTile `json:"tiles"`
}

// MatMulTile is the fastest tile of one kernel for one problem class.
type MatMulTile struct {
	Kernel string            `json:"kernel"`
	Class  string            `json:"class"` // see mmClass
	Spec   map[uint32]uint32 `json:"spec"`  // the tile's specialization constants
	GFLOPS float64           `json:"gflops"`
}

// mmClass names the problems that share a tile: thin ones (M <= 16, a
// batch of a few rows) and the rest, by operand dtypes.
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

// mmTileSpecs are the tile constants each tunable kernel takes; the
// candidates below set all of them.
var mmTileSpecs = map[string][]uint32{
	"matmul_tex":    {0, 1, 2},             // WG, TM, TN
	"matmul_shared": {0, 1, 2, 10, 11, 12}, // WG, TM, TN, BM, BN, BK
}

// mmCandidates are the tiles the autotuner tries for a plan's kernel: specs
// holding the tile constants, valid on the device.
func mmCandidates(info vk.Info, kernel string) []map[uint32]uint32 {
	maxInv := min(info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])
	var cs []map[uint32]uint32
	switch kernel {
	case "matmul_tex":
		for _, tn := range []uint32{8, 16} {
			for _, wg := range []uint32{8, 16, 32} {
				for _, tm := range []uint32{8, 16, 24, 32} {
					if wg <= maxInv {
						cs = append(cs, map[uint32]uint32{0: wg, 1: tm, 2: tn})
					}
				}
			}
		}
	case "matmul_shared":
		for _, t := range [][5]uint32{{64, 64, 16, 4, 4}, {64, 64, 32, 4, 4}, {32, 32, 16, 4, 4},
			{128, 64, 16, 8, 4}, {128, 128, 16, 8, 8}, {128, 128, 32, 8, 8}} {
			bm, bn, bk, tm, tn := t[0], t[1], t[2], t[3], t[4]
			wg := (bm / tm) * (bn / tn)
			if wg <= maxInv && 4*bk*(bm+bn) <= info.MaxSharedMemory {
				cs = append(cs, map[uint32]uint32{0: wg, 1: tm, 2: tn, 10: bm, 11: bn, 12: bk})
			}
		}
	}
	return cs
}

// withTile returns pl with the tile constants of spec, and the output tile
// its workgroups then cover.
func (pl mmPlan) withTile(spec map[uint32]uint32) mmPlan {
	s := make(map[uint32]uint32, len(pl.spec))
	for id, v := range pl.spec {
		s[id] = v
	}
	for _, id := range mmTileSpecs[pl.kernel] {
		s[id] = spec[id]
	}
	pl.spec = s
	switch pl.kernel {
	case "matmul_tex":
		pl.rows, pl.cols = int(s[1]), int(s[2])*int(s[0])
	case "matmul_shared":
		pl.rows, pl.cols = int(s[10]), int(s[11])
	}
	return pl
}

// mmTuned returns the tuned tile for the plan's kernel and class on this
// device, if the autotuner stored one.
func mmTuned(info vk.Info, pl mmPlan, g mmGeom) (map[uint32]uint32, bool) {
	if pl.dyn || mmTileSpecs[pl.kernel] == nil || os.Getenv("VKAMP_TUNE") == "off" {
		return nil, false
	}
	t := mmTunings.get(mmTuneFile(info, os.Getenv("VKAMP_TUNE_DIR")))
	if t == nil {
		return nil, false
	}
	class := mmClass(g)
	for _, tile := range t.Tiles {
		if tile.Kernel == pl.kernel && tile.Class == class && mmTileValid(info, pl.kernel, tile.Spec) {
			return tile.Spec, true
		}
	}
	return nil, false
}

// mmTileValid checks a stored tile against today's candidates, so that an
// edited or stale file cannot ask for a tile the device cannot run.
func mmTileValid(info vk.Info, kernel string, spec map[uint32]uint32) bool {
	for _, c := range mmCandidates(info, kernel) {
		same := true
		for _, id := range mmTileSpecs[kernel] {
			same = same && c[id] == spec[id]
		}
		if same {
			return true
		}
	}
	return false
}

// mmTuneFile is where the tuning of this device and driver lives, under dir
// or else the user's cache directory (MatMul looks under VKAMP_TUNE_DIR if
// set).
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

// ReadMatMulTuning reads a tuning file. A missing file is (nil, nil).
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
	return &t, nil
}

// AutotuneOptions configures AutotuneMatMul.
type AutotuneOptions struct {
	Dir     string        // where to store the result; "" is VKAMP_TUNE_DIR, else the user's cache directory
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
// stored tiles from then on, in this process and later ones (VKAMP_TUNE=off
// ignores them). It never runs on its own: CI runs the rule.
func AutotuneMatMul(d *vk.Device, o AutotuneOptions) (string, *MatMulTuning, error) {
	if o.Size <= 0 {
		o.Size = 1024
	}
	if o.MinTime <= 0 {
		o.MinTime = 300 * time.Millisecond
	}
	info := d.Info()
	if o.Dir == "" {
		o.Dir = os.Getenv("VKAMP_TUNE_DIR")
	}
	path := mmTuneFile(info, o.Dir)
	if path == "" {
		return "", nil, errors.New("tensor: autotune: no cache directory")
	}
	t := &MatMulTuning{Device: info.Name, DeviceUUID: info.DeviceUUID, DriverVersion: info.DriverVersion}
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
	cands := mmCandidates(d.Info(), pl.kernel)
	if o.MaxCandidates > 0 && len(cands) > o.MaxCandidates {
		cands = cands[:o.MaxCandidates]
	}
	if len(cands) == 0 {
		return nil, nil
	}
	best := &MatMulTile{Kernel: pl.kernel, Class: mmClass(g)}
	for _, c := range cands {
		p := pl.withTile(c)
		gflops, err := mmTime(d, a, b, g, p, o.MinTime)
		if err != nil {
			return nil, err
		}
		if o.Log != nil {
			o.Log(fmt.Sprintf("%s %s %v: %.1f GFLOP/s", best.Class, pl.kernel, specString(c), gflops))
		}
		if gflops > best.GFLOPS {
			best.GFLOPS, best.Spec = gflops, c
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
		mmLaunch(out, a, b, nil, nil, g, p, 1, 0)
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

func specString(s map[uint32]uint32) string {
	out := ""
	for id := uint32(0); id < 16; id++ {
		if v, ok := s[id]; ok {
			out += " " + strconv.Itoa(int(id)) + "=" + strconv.Itoa(int(v))
		}
	}
	return "{" + out[min(1, len(out)):] + "}"
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
