// Package mnist reads the MNIST handwritten digits in the IDX format that
// http://yann.lecun.com/exdb/mnist/ distributes, compressed or not.
//
// Load reads a directory holding the four standard files; ReadImages and
// ReadLabels decode one raw IDX stream each. Everything is host memory: a Set
// owns plain slices and nothing here touches a device.
//
// A malformed file is an error that says what is wrong, never a panic: a
// wrong magic number (byte-swapped ones are reported as the wrong
// endianness), element type or number of dimensions, a truncated header or
// body, a label above 9, a corrupt gzip stream, images and labels that do not
// count alike. Bytes after the data are an error too: they mean the header
// does not describe the file, and reading to the end is what makes gzip check
// its CRC. A header may claim at most 1<<31 bytes of data, and memory grows
// with the bytes actually read, so a short file with a huge header allocates
// little.
//
// Batch and Subset panic on misuse (a batch out of range, buffers of the
// wrong length), like an index out of range.
package mnist
