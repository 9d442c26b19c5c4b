package tensor

import (
	"fmt"
	"runtime"

	"github.com/vkamp/vkamp/vk"
)

// Fused kernels over many tensors (the optimizer updates, the scaler's
// unscale) reach them all with one dispatch per memory block: they bind
// whole blocks (vk.Buffer.Block) and read a table of chunks that locates
// every tensor by its word offset in its block. Tensors are sub-allocated,
// so a model's parameters, gradients and moments usually share a block or
// two, and a step costs one dispatch per group of blocks.

// maxTableCols is the most tensors per row of a table: a parameter, its
// gradient, two moments and its half copy.
const maxTableCols = 5

// tableLayout is how one kernel's table describes its tensors. A row is
// the tensors one chunk entry locates together (a parameter with its
// gradient and moments, or one gradient); column 0 of a row is never nil.
type tableLayout struct {
	name  string // for errors
	cols  int    // tensors per row
	entry int    // bytes per chunk entry
	// chunks appends the entries of a row whose tensors start at the given
	// word offsets in their bindings (0 for an absent tensor).
	chunks func(raw []byte, first [maxTableCols]int64, row []*Tensor) []byte
}

// cpuChunks is how many times its chunk a workgroup of the block-table
// kernels (unscale_check, the optimizers, the clipping passes) takes at
// most on a CPU driver (tableChunk).
const cpuChunks = 8

// cpuChunksPerCore is how many chunks a tensor keeps per core at least on a
// CPU driver, whose cores are cpuCores (lavapipe runs a thread per core of
// its process's CPU); variables for tests.
var cpuChunksPerCore, cpuCores = 12, runtime.NumCPU()

// tableChunk is the chunk, in elements or words, of an entry of n in a
// table on d whose kernels take base each on a GPU. On a CPU driver a
// tensor is cut into equal chunks, as many as a multiple of the cores, at
// least cpuChunksPerCore per core and at most cpuChunks times base long: a
// tensor streamed from memory pays less for starting workgroups (some
// microseconds each on lavapipe), one that fits in cache keeps enough of
// them to share the cores evenly. On lavapipe (2 cores, tools/bench, 16M
// elements) stream/unscale-f32 went from 0.30x copy/buffer to 0.60x and
// stream/adam-f32 from 0.50x to 0.61-0.63x; the MNIST MLP's Adam step (a
// 784x256 weight) took 1.1-1.3x as long in 4 to 8 chunks as in 25. Not in
// deterministic mode, where grad_sumsq's partial sums, one per chunk, must
// be those of a GPU.
func tableChunk(d *vk.Device, n, base int) int {
	if !formsOf(d).fewGroups || d.Deterministic() {
		return base
	}
	k := max(ceilDiv(ceilDiv(n, base*cpuChunks), cpuCores), cpuChunksPerCore) * cpuCores
	return max(base, ceilDiv(ceilDiv(n, k), 64)*64) // chunks start 16-byte aligned, half copies too
}

// blockTable is the chunk tables of a list of rows, one per group of rows
// bound to the same buffers. The zero value is empty.
type blockTable struct {
	layout *tableLayout
	key    []*vk.Buffer // every cell's buffer when it was built (nil for an absent one)
	groups []blockGroup
}

// blockGroup is one dispatch: the buffers bound per column and the table
// of their chunks.
type blockGroup struct {
	bind   [maxTableCols]*vk.Buffer
	table  *vk.Buffer
	chunks int
}

// grid is the dispatch of one workgroup per chunk, wrapping into y past the
// 65,535 workgroups a dimension is guaranteed.
func (g *blockGroup) grid() [3]uint32 {
	return [3]uint32{uint32(min(g.chunks, 65535)), uint32((g.chunks + 65534) / 65535), 1}
}

// update makes the tables describe cells, rows of l.cols tensors laid end
// to end, rebuilding them only when the tensors' memory changed since the
// last build (the usual step reuses them). The cells must be live and
// carry no error. On failure the table is left empty, its memory freed.
func (t *blockTable) update(d *vk.Device, l *tableLayout, cells []*Tensor) error {
	if t.current(l, cells) {
		return nil
	}
	t.free()
	groups, err := buildGroups(d, l, cells)
	if err != nil {
		return err
	}
	key := make([]*vk.Buffer, len(cells))
	for i, x := range cells {
		if x != nil {
			key[i] = x.buf
		}
	}
	t.layout, t.key, t.groups = l, key, groups
	return nil
}

// current reports whether the tables were built with layout l for the
// buffers that cells have now.
func (t *blockTable) current(l *tableLayout, cells []*Tensor) bool {
	if t.layout != l || len(t.key) != len(cells) {
		return false
	}
	for i, x := range cells {
		var b *vk.Buffer
		if x != nil {
			b = x.buf
		}
		if b != t.key[i] {
			return false
		}
	}
	return true
}

// buildGroups groups the rows by the buffers they bind and uploads one
// table per group.
func buildGroups(d *vk.Device, l *tableLayout, cells []*Tensor) ([]blockGroup, error) {
	limit := int64(d.Info().MaxStorageBufferRange)
	index := map[[maxTableCols]*vk.Buffer]int{}
	var groups []blockGroup
	var raws [][]byte
	for r := 0; r+l.cols <= len(cells); r += l.cols {
		row := cells[r : r+l.cols]
		var bind [maxTableCols]*vk.Buffer
		var first [maxTableCols]int64
		for c, x := range row {
			if x == nil {
				continue
			}
			blk, off, err := x.buf.Block()
			if err != nil {
				return nil, fmt.Errorf("tensor: %s table: %w", l.name, err)
			}
			if blk.Size() > limit { // a block too large to bind: bind the tensor alone
				blk, off = x.buf, 0
			}
			bind[c], first[c] = blk, off/4
		}
		for c := 1; c < l.cols; c++ {
			if bind[c] == nil {
				bind[c] = bind[0] // an absent tensor: the kernel leaves it alone, any binding will do
			}
		}
		i, ok := index[bind]
		if !ok {
			i = len(groups)
			index[bind] = i
			groups = append(groups, blockGroup{bind: bind})
			raws = append(raws, nil)
		}
		raws[i] = l.chunks(raws[i], first, row)
	}
	for i, raw := range raws {
		tb, err := uploadTable(d, raw)
		if err != nil {
			freeGroups(groups[:i])
			return nil, fmt.Errorf("tensor: %s table: %w", l.name, err)
		}
		groups[i].table, groups[i].chunks = tb, len(raw)/l.entry
	}
	return groups, nil
}

// uploadTable returns a buffer holding raw, freeing it again if the write
// fails.
func uploadTable(d *vk.Device, raw []byte) (*vk.Buffer, error) {
	tb, err := d.Alloc(int64(len(raw)))
	if err != nil {
		return nil, err
	}
	if err := tb.Write(0, raw); err != nil {
		tb.Free()
		return nil, err
	}
	return tb, nil
}

func freeGroups(groups []blockGroup) {
	for _, g := range groups {
		g.table.Free()
	}
}

// free releases the tables' memory (work already recorded still completes)
// and empties t.
func (t *blockTable) free() {
	freeGroups(t.groups)
	*t = blockTable{}
}

// BlockTable holds the chunk tables with which a fused kernel reaches a
// list of tensors in one dispatch per memory block (LossScale.Unscale). It
// rebuilds them when the tensors' memory changed and reuses them while it
// has not, so a training step that passes the same gradients every time
// allocates nothing. The zero value is ready to use; Close frees the
// tables. A BlockTable is not safe for concurrent use.
type BlockTable struct {
	t blockTable
}

// Close frees the tables. It is idempotent; the table can be used again.
func (b *BlockTable) Close() error {
	if b != nil {
		b.t.free()
	}
	return nil
}
