// The safetensors reader/writer: round trip, byte-exact agreement with the reference layout,
// and every corruption the reader must reject with a clear message.

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/safetensors.hpp"

namespace fs = std::filesystem;
using glass::NamedTensor;
using glass::SafetensorsError;

namespace {

/// The reference file, bytes produced by this Python (/usr/bin/python3; the `safetensors`
/// package is not installed, so the script mirrors its Rust serializer: "__metadata__" first,
/// tensors sorted by name, keys dtype/shape/data_offsets, compact JSON, spaces to a multiple
/// of 8, little-endian data):
///   hdr = {"__metadata__": {"format": "pt"},
///          "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
///          "b": {"dtype": "F32", "shape": [2, 1], "data_offsets": [8, 16]}}
///   s = json.dumps(hdr, separators=(",", ":")).encode(); s += b" " * ((8 - len(s) % 8) % 8)
///   struct.pack("<Q", len(s)) + s + struct.pack("<4f", 1.0, -2.5, 0.5, 3.0)
/// len(s) = 144 = 0x90; the data hex is 0000803f 000020c0 0000003f 00004040.
std::string reference_bytes() {
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"F32","shape":[2,1],"data_offsets":[8,16]}}   )";
  std::string bytes("\x90\0\0\0\0\0\0\0", 8);
  bytes += header;
  bytes += std::string("\x00\x00\x80\x3f\x00\x00\x20\xc0\x00\x00\x00\x3f\x00\x00\x40\x40", 16);
  return bytes;
}

std::vector<NamedTensor> reference_tensors() {
  NamedTensor a{"a", {2}, {1.0f, -2.5f}};
  NamedTensor b{"b", {2, 1}, {0.5f, 3.0f}};
  return {a, b};
}

/// A file of `bytes` with the given 8-byte header length and JSON header (no padding added).
std::string make_file(const std::string& json, const std::string& data, std::uint64_t n) {
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((n >> (8 * i)) & 0xFF));
  return bytes + json + data;
}
std::string make_file(const std::string& json, const std::string& data) {
  return make_file(json, data, json.size());
}

/// Expects the parse to fail and the message to contain `needle` and the source name.
void expect_rejected(const std::string& bytes, const std::string& needle) {
  try {
    glass::safetensors_parse(bytes, "weights.safetensors");
    ADD_FAILURE() << "expected SafetensorsError containing: " << needle;
  } catch (const SafetensorsError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    EXPECT_NE(msg.find("weights.safetensors"), std::string::npos) << msg;
  }
}

fs::path temp_dir(const std::string& tag) { return glass_test::temp_dir("glass_st_" + tag); }

}  // namespace

TEST(Safetensors, SerializeMatchesReferenceBytes) {
  EXPECT_EQ(glass::safetensors_serialize(reference_tensors(), {{"format", "pt"}}),
            reference_bytes());
}

TEST(Safetensors, ParsesReferenceBytes) {
  const auto c = glass::safetensors_parse(reference_bytes(), "ref");
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.metadata.at("format"), "pt");
  const NamedTensor* b = c.find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->shape, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(b->data, (std::vector<float>{0.5f, 3.0f}));
  EXPECT_EQ(c.tensors[0].name, "a");  // file order
  EXPECT_EQ(c.tensors[0].data, (std::vector<float>{1.0f, -2.5f}));
  EXPECT_EQ(c.find("missing"), nullptr);
}

TEST(Safetensors, RoundTripThroughAFile) {
  // Names in LLaMA style, given out of alphabetical order; a scalar (shape {}) and an F64 tensor.
  std::vector<NamedTensor> tensors;
  NamedTensor w{"layers.0.attention.wq.weight", {3, 4}, {}};
  for (int i = 0; i < 12; ++i) w.data.push_back(0.1f * static_cast<float>(i) - 0.55f);
  tensors.push_back(w);
  tensors.push_back(
      NamedTensor{"tok_embeddings.weight", {2, 3}, {1e-30f, -0.0f, 3.4e38f, 7, 8, 9}});
  tensors.push_back(NamedTensor{"step", {}, {42.0f}});
  tensors.push_back(NamedTensor::f64("moment64", {3}, {1.0 / 3.0, -2e-300, 5}));
  const fs::path path = temp_dir("roundtrip") / "model.safetensors";
  glass::save_safetensors(path.string(), tensors, {{"step", "17"}});

  const std::string bytes = glass::read_file(path.string());
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);  // data section 8-byte aligned

  const auto c = glass::load_safetensors(path.string());
  EXPECT_EQ(c.metadata.at("step"), "17");
  ASSERT_EQ(c.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(c.tensors[i].name, tensors[i].name);  // data written in the given order
    EXPECT_EQ(c.tensors[i].shape, tensors[i].shape);
    EXPECT_EQ(c.tensors[i].dtype, tensors[i].dtype);
    EXPECT_EQ(c.tensors[i].data, tensors[i].data);  // bit-exact
    EXPECT_EQ(c.tensors[i].data_f64, tensors[i].data_f64);
  }
  EXPECT_EQ(c.find("step")->numel(), 1u);
}

TEST(Safetensors, SerializeRejectsBadTensors) {
  EXPECT_THROW(glass::safetensors_serialize({NamedTensor{"x", {2, 2}, {1, 2, 3}}}),
               std::invalid_argument);
  EXPECT_THROW(
      glass::safetensors_serialize({NamedTensor{"x", {1}, {1}}, NamedTensor{"x", {1}, {2}}}),
      std::invalid_argument);
  EXPECT_THROW(glass::safetensors_serialize({NamedTensor{"", {1}, {1}}}), std::invalid_argument);
  EXPECT_THROW(glass::safetensors_serialize({NamedTensor{"__metadata__", {1}, {1}}}),
               std::invalid_argument);
}

TEST(Safetensors, RejectsTooShortAndAbsurdHeaders) {
  expect_rejected("", "0 bytes");
  expect_rejected(std::string("\x10\0\0", 3), "3 bytes");
  expect_rejected(make_file("", "", 0), "header length 0 is absurd");
  expect_rejected(make_file("{}", "", 0xFFFFFFFFFFFFull),
                  "header length 281474976710655 is absurd");
  expect_rejected(make_file("{}", "", 1000), "runs past the end of the file");
  // A truncated copy of a real file: cut inside the header.
  expect_rejected(reference_bytes().substr(0, 40), "runs past the end of the file");
}

TEST(Safetensors, RejectsBadJson) {
  expect_rejected(make_file("{\"a\": ", ""), "not valid JSON");
  expect_rejected(make_file("[1, 2]  ", ""), "not a JSON object");
  expect_rejected(make_file(R"({"a": 3})", ""), "tensor 'a': entry must be a JSON object");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1]}})", std::string(4, '\0')),
                  "missing \"data_offsets\"");
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", std::string(4, '\0')),
      "non-negative integers");
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", std::string(4, '\0')),
      "[begin, end]");
  expect_rejected(make_file(R"({"__metadata__":{"k":1}})", ""), "must be a string");
}

TEST(Safetensors, RejectsUnsupportedDtype) {
  expect_rejected(
      make_file(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", std::string(4, '\0')),
      "dtype \"BF16\" is not supported");
}

TEST(Safetensors, RejectsBadOffsets) {
  const std::string data8(8, '\0');
  // Size does not match the shape: 2 floats need 8 bytes, offsets give 4.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", data8),
                  "needs 8 bytes");
  // End before begin.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", data8),
                  "end before they begin");
  // Overlap: both tensors claim bytes 0..4.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                            data8),
                  "overlap");
  // A hole: nothing covers bytes 0..4.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", data8),
                  "gap");
  // Bytes left over after the last tensor.
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", data8),
                  "extra bytes");
  // Absurd shape whose element count overflows.
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
                data8),
      "too many");
}

TEST(Safetensors, RejectsTruncatedData) {
  const std::string full = reference_bytes();
  expect_rejected(full.substr(0, full.size() - 3), "the file is truncated");
}

TEST(Safetensors, MissingFileIsASafetensorsError) {
  try {
    glass::load_safetensors("/nonexistent_glass_dir/model.safetensors");
    FAIL();
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos) << e.what();
  }
}

TEST(Safetensors, RejectsDuplicateKeysInTheHeader) {
  // nlohmann::json keeps the last of two equal keys; the reader must not pick one silently.
  const std::string data(8, '\0');
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                            data),
                  "the key \"a\" appears twice");
  expect_rejected(make_file(R"({"__metadata__":{"step":"1","step":"2"}})", ""),
                  "the key \"step\" appears twice");
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","dtype":"F64","shape":[1],"data_offsets":[0,4]}})",
                std::string(4, '\0')),
      "the key \"dtype\" appears twice");
  // The same key in two different objects is fine.
  EXPECT_NO_THROW(
      glass::safetensors_parse(make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                         data),
                               "two.safetensors"));
}

// A tensor with a 0 in its shape holds no bytes (found by the safetensors fuzz harness: copying
// its 0 bytes was undefined behaviour, reported by the sanitizer job).
TEST(Safetensors, ParsesEmptyTensors) {
  const std::string json = R"({"e":{"dtype":"F32","shape":[0,4],"data_offsets":[0,0]},)"
                           R"("d":{"dtype":"F64","shape":[3,0],"data_offsets":[0,0]}})";
  const auto c = glass::safetensors_parse(make_file(json, ""), "empty.safetensors");
  ASSERT_EQ(c.tensors.size(), 2u);
  for (const NamedTensor& t : c.tensors) {
    EXPECT_EQ(t.numel(), 0u) << t.name;
    EXPECT_TRUE(t.data.empty() && t.data_f64.empty()) << t.name;
  }
  EXPECT_EQ(c.find("e")->shape, (std::vector<std::size_t>{0, 4}));
  EXPECT_EQ(c.find("d")->dtype, glass::Dtype::F64);
}
