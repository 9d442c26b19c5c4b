package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/vkamp/vkamp/vk"
)

// Device-side asserts. A kernel that finds data it cannot take, a class
// index outside [0, C) given to NLL or CrossEntropyBackward or an index out
// of range given to Embedding, IndexSelect, Gather, their backward ops or
// OneHot, writes NaN where the value would go (-1 in OneHot's Int32 form)
// and raises its device's assert record (one
// small buffer per device, shaders/include/assert.glsl), as a CUDA
// device-side assert does, without any wait: the host learns of it at its
// next read. While the record is raised, the fused optimizer steps given no
// skip flag take the record for one and skip on the device; a step under a
// gradient scaler skips anyway, because the NaN gradient of the bad row
// reaches the gradients the scaler checks.
//
// Reading any tensor of the device (Float32s, Item, Bytes, Int32s, ...,
// OptimizerState.Steps, a LossScale's state) or Wait then returns an
// *AssertError and clears the record: the read after it reads normally.

// ErrBadTarget is what an *AssertError of a loss whose class index was out of
// range matches with errors.Is.
var ErrBadTarget = errors.New("tensor: class index out of range")

// ErrBadIndex is what an *AssertError of an op whose index tensor held an
// index out of range (Embedding, EmbeddingBackward, IndexSelect, Gather,
// GatherBackward, OneHot) matches with errors.Is. Negative indices are out of
// range too.
var ErrBadIndex = errors.New("tensor: index out of range")

// AssertError is the error a read returns after a kernel raised the
// device's assert: which op found what, in which row. Several bad rows or
// ops before one read give one AssertError, for whichever was found first.
type AssertError struct {
	Op    string // the op whose kernel raised it: "NLL", "Embedding", ...
	Err   error  // what was wrong: ErrBadTarget for a loss, ErrBadIndex for an index op, ErrBadProbs for Multinomial
	Row   int    // the row it was found in: the index's (flat) position in the index tensor
	Value int64  // the value found there
	Bound int    // the value had to lie in [0, Bound)
}

func (e *AssertError) Error() string {
	if errors.Is(e.Err, ErrBadProbs) {
		if e.Value < 0 {
			return fmt.Sprintf("tensor: %s: device-side assert: row %d of the probabilities sums to 0", e.Op, e.Row)
		}
		return fmt.Sprintf("tensor: %s: device-side assert: row %d of the probabilities has column %d negative, NaN or infinite", e.Op, e.Row, e.Value)
	}
	if errors.Is(e.Err, ErrBadIndex) {
		return fmt.Sprintf("tensor: %s: device-side assert: row %d has index %d, outside [0, %d)", e.Op, e.Row, e.Value, e.Bound)
	}
	return fmt.Sprintf("tensor: %s: device-side assert: row %d has target %d, outside the classes [0, %d)", e.Op, e.Row, e.Value, e.Bound)
}

// Unwrap returns Err, so that errors.Is(err, ErrBadTarget) holds.
func (e *AssertError) Unwrap() error { return e.Err }

// The ops that raise asserts, by the code their kernels write (the
// specialization constant ASSERT_OP); 0 is none.
const (
	assertNLL uint32 = 1 + iota
	assertCrossEntropyBackward
	assertNLLBackward
	assertEmbedding
	assertIndexSelect
	assertGather
	assertEmbeddingBackward
	assertGatherBackward
	assertOneHot
	assertMultinomial
)

// assertOps names each code's op and what its assert means.
var assertOps = map[uint32]struct {
	name string
	err  error
}{
	assertNLL:                  {"NLL", ErrBadTarget},
	assertCrossEntropyBackward: {"CrossEntropyBackward", ErrBadTarget},
	assertNLLBackward:          {"NLLBackward", ErrBadTarget},
	assertEmbedding:            {"Embedding", ErrBadIndex},
	assertIndexSelect:          {"IndexSelect", ErrBadIndex},
	assertGather:               {"Gather", ErrBadIndex},
	assertEmbeddingBackward:    {"EmbeddingBackward", ErrBadIndex},
	assertGatherBackward:       {"GatherBackward", ErrBadIndex},
	assertOneHot:               {"OneHot", ErrBadIndex},
	assertMultinomial:          {"Multinomial", ErrBadProbs},
}

// assertWords is the size of the record in 32-bit words.
const assertWords = 8

// asserts is a device's assert record. mu orders the kernels that may raise
// it before the read that looks at it and clears it, so that a raise is
// never cleared unseen.
type asserts struct {
	mu    sync.Mutex
	rec   *Tensor // Int32 [assertWords]; nil until a kernel needs it
	armed bool    // a kernel that may raise it was recorded since the last look
}

type assertsKey struct{}

func assertsOf(d *vk.Device) *asserts {
	return d.Local(assertsKey{}, func() any { return new(asserts) }).(*asserts)
}

// withAssert runs launch, which records a kernel that may raise d's assert
// record, with the record's buffer, made zero on first use.
func withAssert(d *vk.Device, launch func(rec *vk.Buffer) error) error {
	a := assertsOf(d)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rec == nil {
		rec := Zeros(d, Int32, assertWords)
		if err := rec.Err(); err != nil {
			return fmt.Errorf("assert record: %w", err)
		}
		a.rec = rec
	}
	a.armed = true
	return launch(a.rec.buf)
}

// assertRecord returns d's assert record, as the skip flag of an optimizer
// step (its first word is the float 1.0 while it is raised), or nil if no
// kernel that may raise it was ever recorded on d. A clear by a read is
// recorded after every step recorded before it.
func assertRecord(d *vk.Device) *Tensor {
	a := assertsOf(d)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.rec
}

// checkAsserts returns the *AssertError of d's record, and clears it, if a
// kernel raised it. It waits only for the kernels that may raise it, and
// looks at the record only if one was recorded since it last looked.
func checkAsserts(d *vk.Device) error {
	a := assertsOf(d)
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.armed {
		return nil
	}
	raw := make([]byte, 4*assertWords)
	if err := a.rec.buf.Read(0, raw); err != nil {
		return fmt.Errorf("tensor: read the assert record: %w", err)
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(raw[4*i:]) }
	if word(0) == 0 {
		a.armed = false
		return nil
	}
	if err := a.rec.buf.Write(0, make([]byte, 4*assertWords)); err != nil {
		return fmt.Errorf("tensor: clear the assert record: %w", err) // still armed: the next read reports it
	}
	a.armed = false
	op, ok := assertOps[word(1)]
	if !ok {
		op.name, op.err = fmt.Sprintf("op %d", word(1)), ErrBadTarget
	}
	return &AssertError{Op: op.name, Err: op.err, Row: int(word(2)), Value: int64(int32(word(3))), Bound: int(word(4))}
}

// Wait waits until d has finished all the work recorded on it, and returns
// the error of work that failed there: the device's (vk.Device.Wait), or
// the *AssertError of a kernel that raised the device's assert since it was
// last reported, which it clears.
func Wait(d *vk.Device) error {
	if d == nil {
		usagePanic("Wait", "nil device")
	}
	if err := d.Wait(); err != nil {
		return fmt.Errorf("tensor: wait: %w", err)
	}
	return checkAsserts(d)
}
