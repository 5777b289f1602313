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

SafetensorsContents safetensors_parse(const std::string& bytes, const std::string& source) {
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

  const std::size_t data_begin = 8 + static_cast<std::size_t>(n);
  const std::size_t data_size = bytes.size() - data_begin;

  SafetensorsContents contents;
  struct Span {
    std::size_t begin, end;
    std::size_t index;
  };
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(source, "\"__metadata__\" must be an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          fail(source, fmt::format("metadata value of \"{}\" must be a string", key));
        }
        contents.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = fmt::format("tensor '{}'", name);
    if (!entry.is_object()) fail(source, where + ": entry must be a JSON object");
    for (const char* key : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(key)) fail(source, fmt::format("{}: missing \"{}\"", where, key));
    }
    NamedTensor t;
    t.name = name;

    const auto& dtype = entry["dtype"];
    if (!dtype.is_string()) fail(source, where + ": \"dtype\" must be a string");
    const std::string dt = dtype.get<std::string>();
    if (dt == "F32") {
      t.dtype = Dtype::F32;
    } else if (dt == "F64") {
      t.dtype = Dtype::F64;
    } else {
      fail(source, fmt::format("{}: dtype \"{}\" is not supported (GlassLLM reads F32 and F64)",
                               where, dt));
    }

    const auto& shape = entry["shape"];
    if (!shape.is_array()) fail(source, where + ": \"shape\" must be an array of integers");
    std::size_t numel = 1;
    bool overflow = false;
    for (const auto& d : shape) {
      if (!d.is_number_unsigned()) {
        fail(source, where + ": \"shape\" must hold non-negative integers");
      }
      const auto dim = d.get<std::uint64_t>();
      t.shape.push_back(static_cast<std::size_t>(dim));
      if (dim != 0 && numel > std::numeric_limits<std::size_t>::max() / dim) overflow = true;
      numel *= static_cast<std::size_t>(dim);
    }

    const auto& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
      fail(source, where + ": \"data_offsets\" must be [begin, end] with non-negative integers");
    }
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    if (begin > end) {
      fail(source,
           fmt::format("{}: data_offsets [{}, {}] end before they begin", where, begin, end));
    }
    if (end > data_size) {
      fail(source, fmt::format("{}: data_offsets [{}, {}] run past the end of the data ({} bytes): "
                               "the file is truncated",
                               where, begin, end, data_size));
    }
    const std::size_t item = dtype_size(t.dtype);
    if (overflow || numel > data_size / item || end - begin != numel * item) {
      fail(source,
           fmt::format("{}: shape {} of {} needs {} bytes, but data_offsets [{}, {}] give {}",
                       where, shape_string(t.shape), dt,
                       overflow ? std::string("too many") : std::to_string(numel * item), begin,
                       end, end - begin));
    }
    spans.push_back(
        {static_cast<std::size_t>(begin), static_cast<std::size_t>(end), contents.tensors.size()});
    contents.tensors.push_back(std::move(t));
  }

  // The tensors must tile the data section exactly: no overlap, no hole, nothing left over.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::size_t expected = 0;
  for (const Span& s : spans) {
    const std::string& name = contents.tensors[s.index].name;
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

  // Copy the values, and return the tensors in file order.
  std::vector<NamedTensor> ordered;
  ordered.reserve(spans.size());
  for (const Span& s : spans) {
    NamedTensor& t = contents.tensors[s.index];
    const char* src = bytes.data() + data_begin + s.begin;
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
  contents.tensors = std::move(ordered);
  return contents;
}

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomic(path, safetensors_serialize(tensors, metadata));
}

SafetensorsContents load_safetensors(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_file(path);
  } catch (const FileError& e) {
    throw SafetensorsError(e.what());
  }
  return safetensors_parse(bytes, path);
}

}  // namespace glass
