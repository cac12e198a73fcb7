// NumPy's .npy and .npz files: the way tensors and state dicts travel between
// attograd and PyTorch/NumPy.
//
// Loaded: little-endian (or byte-order-free) C-order arrays of float32 '<f4',
// float64 '<f8', int64 '<i8', bool '|b1' (also int32 '<i4', widened to int64),
// format versions 1.0, 2.0 and 3.0; .npz archives stored or deflated (as
// numpy.savez and numpy.savez_compressed write them).
// Rejected with ag::Error (never a crash or an out-of-bounds read): bad magic,
// truncated header or data, malformed header dict, Fortran order, big-endian,
// object or other dtypes, corrupt zip structures, CRC mismatches.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "attograd/tensor.h"

namespace ag {

Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);
std::map<std::string, Tensor> load_npz(const std::string& path);
// Writes an uncompressed archive (numpy.savez layout): one "<name>.npy" per entry.
void save_npz(const std::string& path, const std::map<std::string, Tensor>& tensors);

// The same parsers on bytes in memory (used by the loaders, the fuzzer and tests).
Tensor parse_npy(const uint8_t* data, size_t size);
std::map<std::string, Tensor> parse_npz(const uint8_t* data, size_t size);
std::vector<uint8_t> serialize_npy(const Tensor& t);

}  // namespace ag
