package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"os"
	"strings"
)

// ErrChecksum is wrapped by the error of a file whose bytes do not have the
// checksum recorded for it: the file is corrupt, or was changed.
var ErrChecksum = errors.New("checksum mismatch")

const sumPrefix = "sha256:"

// Sum returns the checksum of data as checkpoints record it: "sha256:"
// and the 64 lowercase hex digits of its SHA-256.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return sumPrefix + hex.EncodeToString(h[:])
}

func sumOf(h hash.Hash) string { return sumPrefix + hex.EncodeToString(h.Sum(nil)) }

// ReadFileSum reads the file at path and checks that its bytes have the
// checksum sum ("" checks nothing). A file whose bytes differ is an error
// wrapping ErrChecksum that names the file and both checksums.
func ReadFileSum(path, sum string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if sum == "" {
		return data, nil
	}
	if !strings.HasPrefix(sum, sumPrefix) {
		return nil, fmt.Errorf("checkpoint: read %s: checksum %q is not sha256:<hex>", path, sum)
	}
	if got := Sum(data); got != sum {
		return nil, fmt.Errorf("checkpoint: read %s: %w: its sha256 is %.12s…, the checkpoint recorded %.12s… (the file is corrupt or was changed)",
			path, ErrChecksum, got[len(sumPrefix):], sum[len(sumPrefix):])
	}
	return data, nil
}
