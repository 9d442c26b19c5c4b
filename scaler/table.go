package scaler

import (
	"encoding/binary"
	"fmt"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// chunkWords is the work of one workgroup of unscale_check: large enough to
// amortise the flag reduction, small enough to spread over many workgroups.
const chunkWords = 8192

// A table lets one dispatch reach every gradient in a memory block: the
// block is bound once and the table lists chunks by word offset. Tensors are
// sub-allocated, so all of a model's gradients usually share a block or two.
type table struct {
	key    []*vk.Buffer // the gradients' buffers it was built for
	groups []group
}

type group struct {
	data   *vk.Buffer // the block, or one large gradient's own buffer
	table  *vk.Buffer // uvec4 per chunk: first word, elements, dtype, 0
	chunks int
}

func (t *table) free() {
	if t == nil {
		return
	}
	for _, g := range t.groups {
		g.table.Free()
	}
}

func (t *table) matches(grads []*tensor.Tensor) bool {
	n := 0
	for _, g := range grads {
		if g == nil {
			continue
		}
		if n >= len(t.key) || t.key[n] != g.Buffer() {
			return false
		}
		n++
	}
	return n == len(t.key)
}

// tableFor returns the chunk table for grads, reusing the last one while the
// gradients keep their memory (the usual case: the same tensors every step).
func (s *Scaler) tableFor(st *optState, grads []*tensor.Tensor) (*table, error) {
	if st.table != nil && st.table.matches(grads) {
		return st.table, nil
	}
	st.table.free()
	st.table = nil
	limit := int64(s.dev.Info().MaxStorageBufferRange)
	t := &table{}
	entries := map[*vk.Buffer][]byte{}
	var order []*vk.Buffer
	for _, g := range grads {
		if g == nil {
			continue
		}
		buf := g.Buffer()
		t.key = append(t.key, buf)
		data, off, err := buf.Block()
		if err != nil {
			return nil, fmt.Errorf("scaler: gradient memory: %w", err)
		}
		if data.Size() > limit { // a block too large to bind: bind the gradient alone
			data, off = buf, 0
		}
		if _, ok := entries[data]; !ok {
			order = append(order, data)
		}
		entries[data] = appendChunks(entries[data], off/4, g.Len(), g.DType())
	}
	for _, data := range order {
		raw := entries[data]
		tb, err := s.dev.Alloc(int64(len(raw)))
		if err == nil {
			err = tb.Write(0, raw)
		}
		if err != nil {
			t.free()
			return nil, fmt.Errorf("scaler: gradient table: %w", err)
		}
		t.groups = append(t.groups, group{data: data, table: tb, chunks: len(raw) / 16})
	}
	st.table = t
	return t, nil
}

// appendChunks splits a gradient of n elements at word offset first into
// table entries of at most chunkWords words.
func appendChunks(raw []byte, first int64, n int, dt tensor.DType) []byte {
	perWord := 1
	if dt == tensor.Float16 {
		perWord = 2
	}
	for done := 0; done < n; done += chunkWords * perWord {
		elems := min(n-done, chunkWords*perWord)
		raw = binary.LittleEndian.AppendUint32(raw, uint32(first+int64(done/perWord)))
		raw = binary.LittleEndian.AppendUint32(raw, uint32(elems))
		raw = binary.LittleEndian.AppendUint32(raw, uint32(dtypeCode(dt)))
		raw = binary.LittleEndian.AppendUint32(raw, 0)
	}
	return raw
}

func dtypeCode(dt tensor.DType) int {
	if dt == tensor.Float16 {
		return 1
	}
	return 0
}
