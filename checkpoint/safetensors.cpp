// The safetensors format: serialize, parse with full validation, atomic save, load.
// See safetensors.hpp for the layout.

#include "checkpoint/safetensors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "checkpoint/atomic_file.hpp"
#include "data/json_no_duplicates.hpp"

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE 754 float/double expected");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.cpp copies tensor data as-is: it assumes a little-endian machine"
#endif

namespace glass {

namespace {

/// The Rust reference implementation refuses headers above 100 MB; so do we.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

const char* dtype_name(Dtype d) { return d == Dtype::F32 ? "F32" : "F64"; }
std::size_t dtype_size(Dtype d) { return d == Dtype::F32 ? 4 : 8; }

std::string shape_string(const std::vector<std::size_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

/// SafetensorsError with the source named in front.
[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw SafetensorsError(fmt::format("corrupt safetensors file '{}': {}", source, what));
}

}  // namespace

std::size_t NamedTensor::numel() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

const NamedTensor* SafetensorsContents::find(const std::string& name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string safetensors_serialize(const std::vector<NamedTensor>& tensors,
                                  const std::map<std::string, std::string>& metadata) {
  // ordered_json keeps "__metadata__" first and the tensors in the order given, which makes
  // the header easy to read (`head -c 2000 model.safetensors`).
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = meta;
  }
  std::set<std::string> names;
  std::size_t offset = 0;
  for (const NamedTensor& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__") {
      throw std::invalid_argument(fmt::format("safetensors: invalid tensor name '{}'", t.name));
    }
    if (!names.insert(t.name).second) {
      throw std::invalid_argument(fmt::format("safetensors: tensor name '{}' used twice", t.name));
    }
    const std::size_t count = t.dtype == Dtype::F32 ? t.data.size() : t.data_f64.size();
    if (count != t.numel()) {
      throw std::invalid_argument(
          fmt::format("safetensors: tensor '{}' has shape {} ({} elements) but {} values", t.name,
                      shape_string(t.shape), t.numel(), count));
    }
    const std::size_t bytes = count * dtype_size(t.dtype);
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string json = header.dump();
  // Pad with spaces so that 8 + N is a multiple of 8 and the data is 8-byte aligned.
  json.append((8 - json.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + json.size() + offset);
  std::uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  out += json;
  for (const NamedTensor& t : tensors) {
    if (t.dtype == Dtype::F32) {
      out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(float));
    } else {
      out.append(reinterpret_cast<const char*>(t.data_f64.data()),
                 t.data_f64.size() * sizeof(double));
    }
  }
  return out;
}

namespace {

/// Step 1: the little-endian u64 in the first 8 bytes, the header's length N in bytes.
/// Refuses a file shorter than 8 bytes, an N of 0 or past kMaxHeaderBytes, and an N that runs
/// past the end of the file.
std::uint64_t read_header_length(const std::string& bytes, const std::string& source) {
  if (bytes.size() < 8) {
    fail(source, fmt::format("the file has {} bytes, fewer than the 8-byte header length that "
                             "starts every safetensors file (truncated?)",
                             bytes.size()));
  }
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  if (n == 0 || n > kMaxHeaderBytes) {
    fail(source, fmt::format("header length {} is absurd (must be between 1 and {} bytes); "
                             "this is not a safetensors file",
                             n, kMaxHeaderBytes));
  }
  if (n > bytes.size() - 8) {
    fail(source, fmt::format("header length {} runs past the end of the file ({} bytes): the file "
                             "is truncated",
                             n, bytes.size()));
  }
  return n;
}

/// Step 2: bytes [8, 8 + n) as a JSON object, duplicate keys and deep nesting refused.
nlohmann::json parse_header(const std::string& bytes, std::uint64_t n, const std::string& source) {
  nlohmann::json header;
  try {
    header = parse_json_no_duplicate_keys(bytes.begin() + 8,
                                          bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  } catch (const DuplicateKeyError& e) {
    fail(source, fmt::format("the header is ambiguous: {}", e.what()));
  } catch (const JsonTooDeepError& e) {
    fail(source, fmt::format("the header is {}", e.what()));
  } catch (const nlohmann::json::exception& e) {
    fail(source, fmt::format("the header is not valid JSON ({})", e.what()));
  }
  if (!header.is_object()) fail(source, "the header is not a JSON object");
  return header;
}

/// The "__metadata__" entry: an object of strings, copied into `metadata`.
void read_metadata(const nlohmann::json& entry, const std::string& source,
                   std::map<std::string, std::string>& metadata) {
  if (!entry.is_object()) fail(source, "\"__metadata__\" must be an object of strings");
  for (const auto& [key, value] : entry.items()) {
    if (!value.is_string()) {
      fail(source, fmt::format("metadata value of \"{}\" must be a string", key));
    }
    metadata[key] = value.get<std::string>();
  }
}

/// A tensor entry's "dtype": "F32" or "F64".
Dtype read_dtype(const nlohmann::json& dtype, const std::string& where, const std::string& source) {
  if (!dtype.is_string()) fail(source, where + ": \"dtype\" must be a string");
  const std::string dt = dtype.get<std::string>();
  if (dt == "F32") return Dtype::F32;
  if (dt == "F64") return Dtype::F64;
  fail(source,
       fmt::format("{}: dtype \"{}\" is not supported (GlassLLM reads F32 and F64)", where, dt));
}

/// A tensor entry's "shape" and its element count; `overflow` when the count does not fit
/// in a size_t.
struct Shape {
  std::vector<std::size_t> dims;
  std::size_t numel = 1;
  bool overflow = false;
};

Shape read_shape(const nlohmann::json& shape, const std::string& where, const std::string& source) {
  if (!shape.is_array()) fail(source, where + ": \"shape\" must be an array of integers");
  Shape s;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned()) {
      fail(source, where + ": \"shape\" must hold non-negative integers");
    }
    const auto dim = d.get<std::uint64_t>();
    s.dims.push_back(static_cast<std::size_t>(dim));
    if (dim != 0 && s.numel > std::numeric_limits<std::size_t>::max() / dim) s.overflow = true;
    s.numel *= static_cast<std::size_t>(dim);
  }
  return s;
}

/// Where a tensor's bytes lie in the data section: [begin, end), and the tensor's index in
/// header order.
struct Span {
  std::size_t begin, end;
  std::size_t index;
};

/// A tensor entry's "data_offsets": [begin, end] inside the data section (`data_size` bytes),
/// exactly as many bytes as the shape and dtype need.
Span read_data_offsets(const nlohmann::json& offsets, const NamedTensor& t, const Shape& shape,
                       std::size_t data_size, const std::string& where, const std::string& source) {
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    fail(source, where + ": \"data_offsets\" must be [begin, end] with non-negative integers");
  }
  const auto begin = offsets[0].get<std::uint64_t>();
  const auto end = offsets[1].get<std::uint64_t>();
  if (begin > end) {
    fail(source, fmt::format("{}: data_offsets [{}, {}] end before they begin", where, begin, end));
  }
  if (end > data_size) {
    fail(source, fmt::format("{}: data_offsets [{}, {}] run past the end of the data ({} bytes): "
                             "the file is truncated",
                             where, begin, end, data_size));
  }
  const std::size_t item = dtype_size(t.dtype);
  if (shape.overflow || shape.numel > data_size / item || end - begin != shape.numel * item) {
    fail(source,
         fmt::format("{}: shape {} of {} needs {} bytes, but data_offsets [{}, {}] give {}", where,
                     shape_string(t.shape), dtype_name(t.dtype),
                     shape.overflow ? std::string("too many") : std::to_string(shape.numel * item),
                     begin, end, end - begin));
  }
  return {static_cast<std::size_t>(begin), static_cast<std::size_t>(end), 0};
}

/// Step 3, per tensor: the entry is an object with "dtype", "shape" and "data_offsets", each
/// valid and agreeing with the others. Returns the tensor (without its values) and its span.
std::pair<NamedTensor, Span> read_tensor_entry(const std::string& name, const nlohmann::json& entry,
                                               std::size_t data_size, const std::string& source) {
  const std::string where = fmt::format("tensor '{}'", name);
  if (!entry.is_object()) fail(source, where + ": entry must be a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(key)) fail(source, fmt::format("{}: missing \"{}\"", where, key));
  }
  NamedTensor t;
  t.name = name;
  t.dtype = read_dtype(entry.at("dtype"), where, source);
  Shape shape = read_shape(entry.at("shape"), where, source);
  t.shape = shape.dims;
  const Span span = read_data_offsets(entry.at("data_offsets"), t, shape, data_size, where, source);
  return {std::move(t), span};
}

/// Step 4: the tensors must tile the data section exactly: no overlap, no hole, nothing left
/// over. Sorts `spans` by position.
void check_coverage(std::vector<Span>& spans, const std::vector<NamedTensor>& tensors,
                    std::size_t data_size, const std::string& source) {
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::size_t expected = 0;
  for (const Span& s : spans) {
    const std::string& name = tensors[s.index].name;
    if (s.begin < expected) {
      fail(source, fmt::format("tensor '{}': data_offsets [{}, {}] overlap another tensor's data",
                               name, s.begin, s.end));
    }
    if (s.begin > expected) {
      fail(source, fmt::format("tensor '{}': data_offsets [{}, {}] leave a gap after byte {}", name,
                               s.begin, s.end, expected));
    }
    expected = s.end;
  }
  if (expected != data_size) {
    fail(source, fmt::format("the tensors cover {} bytes of data but the file holds {}: "
                             "extra bytes at the end",
                             expected, data_size));
  }
}

/// Step 5: copy each tensor's values from the data section (which starts at `data`), and
/// return the tensors in file order (the order of `spans`).
std::vector<NamedTensor> copy_values(std::vector<NamedTensor>& tensors,
                                     const std::vector<Span>& spans, const char* data) {
  std::vector<NamedTensor> ordered;
  ordered.reserve(spans.size());
  for (const Span& s : spans) {
    NamedTensor& t = tensors[s.index];
    const char* src = data + s.begin;
    const std::size_t count = (s.end - s.begin) / dtype_size(t.dtype);
    // An empty tensor (a 0 in its shape) has no bytes; memcpy to the null data() of an empty
    // vector would be undefined behaviour, even for 0 bytes.
    if (t.dtype == Dtype::F32) {
      t.data.resize(count);
      if (count != 0) std::memcpy(t.data.data(), src, count * sizeof(float));
    } else {
      t.data_f64.resize(count);
      if (count != 0) std::memcpy(t.data_f64.data(), src, count * sizeof(double));
    }
    ordered.push_back(std::move(t));
  }
  return ordered;
}

}  // namespace

SafetensorsContents safetensors_parse(const std::string& bytes, const std::string& source) {
  const std::uint64_t n = read_header_length(bytes, source);
  const nlohmann::json header = parse_header(bytes, n, source);
  const std::size_t data_begin = 8 + static_cast<std::size_t>(n);
  const std::size_t data_size = bytes.size() - data_begin;

  SafetensorsContents contents;
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      read_metadata(entry, source, contents.metadata);
      continue;
    }
    auto [tensor, span] = read_tensor_entry(name, entry, data_size, source);
    span.index = contents.tensors.size();
    spans.push_back(span);
    contents.tensors.push_back(std::move(tensor));
  }
  check_coverage(spans, contents.tensors, data_size, source);
  contents.tensors = copy_values(contents.tensors, spans, bytes.data() + data_begin);
  return contents;
}

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, safetensors_serialize(tensors, metadata));
}

SafetensorsContents load_safetensors(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_checkpoint_file(path);
  } catch (const FileError& e) {
    throw SafetensorsError(e.what());
  }
  return safetensors_parse(bytes, path);
}

}  // namespace glass
