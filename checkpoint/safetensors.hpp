#pragma once
// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//
//   bytes 0..7      N, the length of the JSON header, unsigned 64-bit little-endian
//   bytes 8..8+N    JSON: {"__metadata__": {"key": "value", ...},
//                          "name": {"dtype": "F32", "shape": [d0, d1, ...],
//                                   "data_offsets": [begin, end]}, ...}
//                   padded with spaces so that the data starts at a multiple of 8
//   bytes 8+N..     the raw tensor data, little-endian, row-major (C order); each tensor's
//                   bytes are data[begin:end] counted from the start of this data section
//
// Only what GlassLLM needs: F32 (weights, optimizer moments) and F64. Nothing here depends on
// the autograd, so the format can be tested on its own.

#include <cstddef>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace glass {

/// A safetensors file that cannot be read: the message names the file and what is wrong
/// (too short, absurd header length, bad JSON, unsupported dtype, bad offsets, truncated data).
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Element types we read and write.
enum class Dtype { F32, F64 };

/// One named tensor, row-major. For dtype F32 the values are in `data`; for F64 in `data_f64`
/// (the other vector stays empty).
struct NamedTensor {
  NamedTensor() = default;
  /// An F32 tensor.
  NamedTensor(std::string name, std::vector<std::size_t> shape, std::vector<float> data)
      : name(std::move(name)), shape(std::move(shape)), data(std::move(data)) {}
  /// An F64 tensor.
  static NamedTensor f64(std::string name, std::vector<std::size_t> shape,
                         std::vector<double> data) {
    NamedTensor t(std::move(name), std::move(shape), {});
    t.dtype = Dtype::F64;
    t.data_f64 = std::move(data);
    return t;
  }

  std::string name;
  std::vector<std::size_t> shape;
  std::vector<float> data;
  Dtype dtype = Dtype::F32;
  std::vector<double> data_f64;

  /// Number of elements: the product of the shape (1 for a scalar, shape {}).
  std::size_t numel() const;
};

/// The contents of a safetensors file: tensors in file (data offset) order and the metadata.
struct SafetensorsContents {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor called `name`, or nullptr.
  const NamedTensor* find(const std::string& name) const;
};

/// The bytes of a safetensors file holding `tensors` (data in the given order) and `metadata`.
/// Throws std::invalid_argument for an empty or duplicate name, a name "__metadata__", or a
/// data size that does not match the shape.
std::string safetensors_serialize(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata = {});

/// Parses the bytes of a safetensors file. `source` (usually the path) is named in every error.
/// Validates everything and throws SafetensorsError.
SafetensorsContents safetensors_parse(const std::string& bytes, const std::string& source);

/// Writes a safetensors file atomically (temp file + rename, see atomic_file.hpp).
/// Throws std::invalid_argument (bad tensors) or FileError (cannot write).
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a safetensors file. Throws SafetensorsError (also for a missing file).
SafetensorsContents load_safetensors(const std::string& path);

}  // namespace glass
