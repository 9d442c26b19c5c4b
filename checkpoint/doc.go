// Package checkpoint saves and restores tensors in the safetensors format,
// and other state as JSON, writing every file atomically.
//
// # Format
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of
// JSON header, then the data buffer:
//
//	{"__metadata__": {"k": "v"},
//	 "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
//
// Offsets are relative to the buffer, tensors are stored row-major and
// little-endian, back to back in the order given to Save, and the header is
// padded with spaces to a multiple of 8 bytes, as the reference
// implementation writes it, so files load in PyTorch, JAX or NumPy.
// F32, F16, BF16 and I32, the four tensor dtypes, are read and written.
//
// # Host and device
//
// Save reads each tensor back from its device, so it waits for the work that
// computes them. Read returns host memory only. Load checks every name, shape
// and dtype first and returns one *MismatchError listing all differences
// before it writes any tensor; then it uploads each tensor's bytes.
// LoadWith is as lenient as PyTorch's load_state_dict can be: non-strict
// (the names a file and the tensors share are loaded, the others listed in
// a LoadResult), converting between fp32, fp16 and bf16 on the device, and
// renaming (a "_orig_mod." prefix).
//
// # Atomicity
//
// Save and SaveJSON write a temporary file in the destination's directory,
// sync it, rename it over the destination and sync the directory: a crash
// leaves either the old file or the new one, never a torn one. On any error
// the temporary file is removed and the destination is untouched. New files
// get mode 0644; a replaced file keeps its mode.
//
// # Non-finite values
//
// Save writes NaN and inf bit patterns as it reads them. SaveWith with
// SaveOptions.Finite refuses a float tensor holding one, checking the bytes
// it reads back for the file, and returns a *NonFiniteError naming the
// first such tensor; the destination is untouched. NonFinite counts them,
// and File.CheckFinite refuses a file read that holds them.
//
// # Checksums
//
// SaveWith returns the SHA-256 of the bytes it wrote ("sha256:" and hex, as
// Sum gives it); ReadSum and ReadFileSum check a file against one before
// parsing it, and a file whose bytes differ is an error wrapping
// ErrChecksum that names it. Recording checksums is the caller's: package
// nn keeps them in each checkpoint version's state.json.
//
// # Locking
//
// LockDir takes a directory's lock for one writer at a time, through the
// file LOCK, which holds the writer's pid, host and start time; a second
// writer gets a *LockedError naming them. Where flock(2) exists the kernel
// drops the lock of a process that dies, and its stale LOCK file is taken
// over.
//
// # Errors
//
// A truncated or corrupt file is an error that says what is wrong, never a
// panic: header lengths beyond 100 MiB or the file, malformed JSON, unknown
// dtypes, negative or overflowing shapes, offsets outside the buffer, sizes
// that do not match shapes, overlapping tensors, gaps, bytes after the last
// tensor, duplicate names. Save and Load panic, through the tensor package,
// when given a nil or released tensor.
package checkpoint
