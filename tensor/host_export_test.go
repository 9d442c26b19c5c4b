package tensor

// RawBytes returns t's bytes as stored, padding included.
func (t *Tensor) RawBytes() ([]byte, error) { return t.raw("RawBytes") }

// WriteRawBytes overwrites t's bytes, padding included.
func (t *Tensor) WriteRawBytes(b []byte) { t.write(b) }
