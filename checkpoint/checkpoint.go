package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/vkamp/vkamp/tensor"
)

// Named is a tensor and the name it has in a file.
type Named struct {
	Name string
	T    *tensor.Tensor
}

// File is the content of a safetensors file, in host memory.
type File struct {
	Tensors map[string]HostTensor
	Meta    map[string]string // nil when the file has none
	path    string            // where Read found it, for errors
	order   []string          // the names in the header's order
}

// HostTensor is one tensor of a File.
type HostTensor struct {
	DType tensor.DType
	Shape []int
	// Data holds the elements row-major and little-endian, as the file does
	// (fp16 and bf16 as uint16 bits).
	Data []byte
}

// Save writes ts, in order, and meta to path as a safetensors file,
// atomically. It reads each tensor back from its device, waiting for the
// work that computes it; a tensor that carries an error fails the save.
// Names must be distinct, valid UTF-8 and not "__metadata__".
func Save(path string, ts []Named, meta map[string]string) error {
	_, err := SaveWith(path, ts, meta, SaveOptions{})
	return err
}

// SaveOptions configure SaveWith.
type SaveOptions struct {
	// Finite refuses float tensors holding a NaN or an infinity: the
	// error is a *NonFiniteError, and path is left as it was. The check is
	// on the bytes read back for the file, so it costs no extra read.
	Finite bool
}

// SaveWith is Save with options. It returns the checksum of the file it
// wrote, as Sum gives it, computed on the bytes as they are written.
func SaveWith(path string, ts []Named, meta map[string]string, o SaveOptions) (sum string, err error) {
	entries := make([]entry, len(ts))
	seen := map[string]bool{}
	for i, n := range ts {
		switch {
		case seen[n.Name]:
			return "", fmt.Errorf("checkpoint: save %s: name %q given twice", path, n.Name)
		case n.Name == metaKey || !utf8.ValidString(n.Name):
			return "", fmt.Errorf("checkpoint: save %s: invalid name %q", path, n.Name)
		}
		seen[n.Name] = true
		dt := n.T.DType()
		entries[i] = entry{name: n.Name, dtype: dt, shape: n.T.Shape(), size: int64(n.T.Len()) * int64(dt.Size())}
	}
	for k, v := range meta {
		// JSON would turn invalid UTF-8 into U+FFFD: the file would not
		// hold what was saved.
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("checkpoint: save %s: metadata %q: %q is not valid UTF-8", path, k, v)
		}
	}
	hdr := encodeHeader(entries, meta)
	var refused *NonFiniteError
	h := sha256.New()
	err = writeAtomic(path, func(file io.Writer) error {
		w := io.MultiWriter(file, h)
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		for _, n := range ts {
			raw, err := n.T.Bytes()
			if err != nil {
				return fmt.Errorf("tensor %q: %w", n.Name, err)
			}
			if o.Finite {
				if nan, inf := NonFinite(n.T.DType(), raw); nan+inf > 0 {
					if refused == nil {
						refused = &NonFiniteError{Op: "save", Path: path, Name: n.Name, NaN: nan, Inf: inf, Len: n.T.Len(), Of: len(ts)}
					}
					refused.Tensors++
				}
			}
			if refused != nil {
				continue // read the rest only to count them
			}
			if _, err := w.Write(raw); err != nil {
				return err
			}
		}
		if refused != nil {
			return refused
		}
		return nil
	})
	if refused != nil && err == refused {
		return "", refused
	}
	if err != nil {
		return "", fmt.Errorf("checkpoint: save %s: %w", path, err)
	}
	return sumOf(h), nil
}

// Read reads and validates the safetensors file at path.
func Read(path string) (*File, error) {
	return ReadSum(path, "")
}

// ReadSum reads the safetensors file at path, checks that its bytes have
// the checksum sum (as Sum gives it; "" checks nothing), then validates it.
// A file whose bytes differ is an error wrapping ErrChecksum.
func ReadSum(path, sum string) (*File, error) {
	if sum != "" {
		data, err := ReadFileSum(path, sum)
		if err != nil {
			return nil, err
		}
		file, err := parse(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: read %s: %w", path, err)
		}
		file.path = path
		return file, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	file, err := parse(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", path, err)
	}
	file.path = path
	return file, nil
}

// MismatchError is the error of a Load whose tensors do not match the file.
type MismatchError struct {
	Path     string
	Problems []string // one line per difference, in the order of the tensors given, then the file's extra names
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("checkpoint: load %s: %d mismatches: %s", e.Path, len(e.Problems), strings.Join(e.Problems, "; "))
}

// Load reads path and copies its tensors into ts. The file must hold exactly
// the names of ts, each with the tensor's shape and dtype; otherwise Load
// returns a *MismatchError listing every difference and writes no tensor.
// Metadata are ignored (Read returns them). An upload that fails part way
// may leave some tensors written.
func Load(path string, ts []Named) error {
	f, err := Read(path)
	if err != nil {
		return err
	}
	return f.Fill(ts)
}

// Check reports whether f holds exactly the names of ts, each with the
// tensor's shape and dtype: it returns nil, or a *MismatchError listing
// every difference. It changes nothing.
func (f *File) Check(ts []Named) error {
	var problems []string
	want := map[string]bool{}
	for _, n := range ts {
		if want[n.Name] {
			problems = append(problems, fmt.Sprintf("%q given twice", n.Name))
			continue
		}
		want[n.Name] = true
		h, ok := f.Tensors[n.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("missing %q", n.Name))
			continue
		}
		if dt := n.T.DType(); h.DType != dt {
			problems = append(problems, fmt.Sprintf("%q: dtype %s in the file, %s in the tensor", n.Name, h.DType, dt))
		}
		if s := n.T.Shape(); !slices.Equal(h.Shape, s) {
			problems = append(problems, fmt.Sprintf("%q: shape %v in the file, %v in the tensor", n.Name, h.Shape, s))
		}
		if err := n.T.Err(); err != nil {
			problems = append(problems, fmt.Sprintf("%q: the tensor carries an error: %v", n.Name, err))
		}
	}
	var extra []string
	for name := range f.Tensors {
		if !want[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		problems = append(problems, fmt.Sprintf("extra %q in the file", name))
	}
	if len(problems) > 0 {
		return &MismatchError{Path: f.path, Problems: problems}
	}
	return nil
}

// Fill checks f against ts as Check does, then copies each tensor of f into
// the tensor of ts of its name. An upload that fails part way may leave
// some tensors written.
func (f *File) Fill(ts []Named) error {
	if err := f.Check(ts); err != nil {
		return err
	}
	for _, n := range ts {
		if err := n.T.SetBytes(f.Tensors[n.Name].Data); err != nil {
			return fmt.Errorf("checkpoint: load %s: upload %q: %w", f.path, n.Name, err)
		}
	}
	return nil
}
