package checkpoint

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// LoadOptions make a load as lenient as PyTorch's load_state_dict can be.
type LoadOptions struct {
	// NonStrict loads the names the file and the tensors share and reports
	// the others in the LoadResult, as load_state_dict(strict=False) does
	// (fine-tuning a new head, a partial checkpoint). A shape or dtype
	// that differs is still an error.
	NonStrict bool
	// Convert loads a tensor stored as Float32, Float16 or BFloat16 into a
	// tensor of another of them, converted on the device as tensor.Cast
	// converts: exact where the tensor's dtype is wider, rounded to
	// nearest even where it is narrower. Without it another dtype is an
	// error.
	Convert bool
	// Rename maps a tensor's name to its name in the file (a prefix such
	// as "_orig_mod." added, or one removed); nil keeps names.
	Rename func(name string) string
}

// LoadResult lists what a non-strict load left out, as PyTorch's
// _IncompatibleKeys does: the tensors' names the file lacks (Missing) and
// the file's names no tensor took (Unexpected), each sorted.
type LoadResult struct {
	Missing, Unexpected []string
}

// LoadWith reads path and copies its tensors into ts as o allows. Every
// difference it does not allow is listed in a *MismatchError, and then no
// tensor is written.
func LoadWith(path string, ts []Named, o LoadOptions) (LoadResult, error) {
	f, err := Read(path)
	if err != nil {
		return LoadResult{}, err
	}
	return f.FillWith(ts, o)
}

// FillWith is Fill as o allows (LoadWith).
func (f *File) FillWith(ts []Named, o LoadOptions) (LoadResult, error) {
	rename := o.Rename
	if rename == nil {
		rename = func(name string) string { return name }
	}
	var res LoadResult
	var problems []string
	taken := map[string]string{} // file name: the tensor's name
	var load []Named             // the tensors to fill, named as in the file
	for _, n := range ts {
		name := rename(n.Name)
		if prev, ok := taken[name]; ok {
			problems = append(problems, fmt.Sprintf("%q and %q both name %q", prev, n.Name, name))
			continue
		}
		taken[name] = n.Name
		h, ok := f.Tensors[name]
		switch {
		case !ok && o.NonStrict:
			res.Missing = append(res.Missing, n.Name)
			continue
		case !ok:
			problems = append(problems, fmt.Sprintf("missing %q", name))
			continue
		}
		if dt := n.T.DType(); h.DType != dt && !(o.Convert && isFloat(h.DType) && isFloat(dt)) {
			problems = append(problems, fmt.Sprintf("%q: dtype %s in the file, %s in the tensor", name, h.DType, dt))
		}
		if s := n.T.Shape(); !slices.Equal(h.Shape, s) {
			problems = append(problems, fmt.Sprintf("%q: shape %v in the file, %v in the tensor", name, h.Shape, s))
		}
		if err := n.T.Err(); err != nil {
			problems = append(problems, fmt.Sprintf("%q: the tensor carries an error: %v", name, err))
		}
		load = append(load, Named{name, n.T})
	}
	for _, name := range f.order {
		if _, ok := taken[name]; ok {
			continue
		}
		if o.NonStrict {
			res.Unexpected = append(res.Unexpected, name)
		} else {
			problems = append(problems, fmt.Sprintf("extra %q in the file", name))
		}
	}
	slices.Sort(res.Missing)
	slices.Sort(res.Unexpected)
	if len(problems) > 0 {
		return res, &MismatchError{Path: f.path, Problems: problems}
	}
	for _, n := range load {
		if err := f.fillOne(n); err != nil {
			return res, fmt.Errorf("checkpoint: load %s: upload %q: %w", f.path, n.Name, err)
		}
	}
	return res, nil
}

// fillOne copies the file's tensor n.Name into n.T, converting its dtype on
// the device if it differs.
func (f *File) fillOne(n Named) error {
	h := f.Tensors[n.Name]
	if h.DType == n.T.DType() {
		return n.T.SetBytes(h.Data)
	}
	src := tensor.New(n.T.Device(), h.DType, h.Shape...)
	defer src.Release()
	if err := src.SetBytes(h.Data); err != nil {
		return err
	}
	c := tensor.Cast(src, n.T.DType())
	defer c.Release()
	return n.T.CopyFrom(c)
}

func isFloat(dt tensor.DType) bool {
	return dt == tensor.Float32 || dt == tensor.Float16 || dt == tensor.BFloat16
}
