// Fuzzes the safetensors reader (train/safetensors.hpp). The input is the bytes of a file.
// safetensors_parse must either throw SafetensorsError (any other exception or a crash is a
// failure) or return tensors whose data match their shapes and lie in the file; what it returns
// must serialize and parse back to the same tensors and metadata.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "checkpoint/safetensors.hpp"

namespace {

/// memcmp of n bytes; an empty tensor's data() may be null, which memcmp must not see.
bool same_bytes(const void* a, const void* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n) == 0;
}

bool same_bits(const glass::NamedTensor& a, const glass::NamedTensor& b) {
  if (a.name != b.name || a.shape != b.shape || a.dtype != b.dtype) return false;
  if (a.data.size() != b.data.size() || a.data_f64.size() != b.data_f64.size()) return false;
  // Bitwise, so that NaN payloads count as equal to themselves.
  return same_bytes(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) &&
         same_bytes(a.data_f64.data(), b.data_f64.data(), a.data_f64.size() * sizeof(double));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  glass::SafetensorsContents contents;
  try {
    contents = glass::safetensors_parse(bytes, "fuzz.safetensors");
  } catch (const glass::SafetensorsError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "fuzz.safetensors") != nullptr);  // names the file
    return 0;
  }
  std::size_t payload = 0;
  for (const glass::NamedTensor& t : contents.tensors) {
    const std::size_t n = t.numel();
    if (t.dtype == glass::Dtype::F32) {
      GLASS_FUZZ_CHECK(t.data.size() == n && t.data_f64.empty());
      payload += n * 4;
    } else {
      GLASS_FUZZ_CHECK(t.data_f64.size() == n && t.data.empty());
      payload += n * 8;
    }
    GLASS_FUZZ_CHECK(contents.find(t.name) != nullptr);
  }
  GLASS_FUZZ_CHECK(payload <= size);

  const std::string again = glass::safetensors_serialize(contents.tensors, contents.metadata);
  const glass::SafetensorsContents back = glass::safetensors_parse(again, "round trip");
  GLASS_FUZZ_CHECK(back.metadata == contents.metadata);
  GLASS_FUZZ_CHECK(back.tensors.size() == contents.tensors.size());
  for (std::size_t i = 0; i < back.tensors.size(); ++i)
    GLASS_FUZZ_CHECK(same_bits(back.tensors[i], contents.tensors[i]));
  return 0;
}
