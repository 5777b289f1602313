// Yardsticks for a validation loss: an add-one character bigram and xz (see yardstick.hpp).

#include "data/yardstick.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <lzma.h>

#include "data/text.hpp"

namespace glass {

double bigram_bits_per_byte(const std::u32string& train, const std::u32string& val) {
  if (val.empty()) throw std::invalid_argument("bigram_bits_per_byte: an empty validation text");
  // n(p, c) for each pair of neighbours in the training text, and n(p) = sum over c.
  std::unordered_map<std::uint64_t, std::size_t> pairs;
  std::unordered_map<char32_t, std::size_t> firsts;
  auto key = [](char32_t p, char32_t c) { return (std::uint64_t{p} << 32) | c; };
  for (std::size_t i = 1; i < train.size(); ++i) {
    ++pairs[key(train[i - 1], train[i])];
    ++firsts[train[i - 1]];
  }
  std::unordered_set<char32_t> alphabet(train.begin(), train.end());
  alphabet.insert(val.begin(), val.end());
  const auto V = static_cast<double>(alphabet.size());
  // -log2 P(c | p) = log2(n(p) + V) - log2(n(p, c) + 1), summed over the validation text, each
  // character after the one before it (the first after the training text's last).
  double bits = 0;
  for (std::size_t i = 0; i < val.size(); ++i) {
    if (i == 0 && train.empty()) {
      bits += std::log2(V);  // nothing before it: uniform over the alphabet
      continue;
    }
    const char32_t p = i == 0 ? train.back() : val[i - 1];
    const auto pair = pairs.find(key(p, val[i]));
    const auto first = firsts.find(p);
    const double n_pc = pair == pairs.end() ? 0.0 : static_cast<double>(pair->second);
    const double n_p = first == firsts.end() ? 0.0 : static_cast<double>(first->second);
    bits += std::log2(n_p + V) - std::log2(n_pc + 1);
  }
  return bits / static_cast<double>(u32_to_utf8(val).size());
}

std::size_t xz_size(const std::string& bytes) {
  lzma_options_lzma options;
  if (lzma_lzma_preset(&options, 9) != 0) throw std::runtime_error("liblzma: no preset 9");
  std::uint32_t dict = 4096;
  while (dict < bytes.size() && dict < (64u << 20)) dict *= 2;
  options.dict_size = dict;
  const lzma_filter filters[] = {{LZMA_FILTER_LZMA2, &options}, {LZMA_VLI_UNKNOWN, nullptr}};
  lzma_stream stream = LZMA_STREAM_INIT;
  if (lzma_stream_encoder(&stream, filters, LZMA_CHECK_CRC64) != LZMA_OK)
    throw std::runtime_error("liblzma: cannot start the encoder (out of memory?)");
  stream.next_in = reinterpret_cast<const std::uint8_t*>(bytes.data());
  stream.avail_in = bytes.size();
  std::vector<std::uint8_t> buffer(1 << 16);
  std::size_t size = 0;
  lzma_ret ret = LZMA_OK;
  while (ret == LZMA_OK) {  // only the size is kept: the output goes through one buffer
    stream.next_out = buffer.data();
    stream.avail_out = buffer.size();
    ret = lzma_code(&stream, LZMA_FINISH);
    size += buffer.size() - stream.avail_out;
  }
  lzma_end(&stream);
  if (ret != LZMA_STREAM_END) throw std::runtime_error("liblzma: compression failed");
  return size;
}

double xz_bits_per_byte(const std::string& train, const std::string& val) {
  if (val.empty()) throw std::invalid_argument("xz_bits_per_byte: an empty validation text");
  const double both = static_cast<double>(xz_size(train + val));
  const double alone = static_cast<double>(xz_size(train));
  return (both - alone) * 8.0 / static_cast<double>(val.size());
}

Yardstick measure_yardstick(const std::u32string& train, const std::u32string& val) {
  const std::u32string t =
      train.substr(train.size() - std::min(train.size(), kYardstickTrainChars));
  const std::u32string v = val.substr(0, kYardstickValChars);
  Yardstick y;
  y.train_chars = t.size();
  y.val_chars = v.size();
  const std::string v8 = u32_to_utf8(v);
  y.val_bytes = v8.size();
  y.bigram_bits_per_byte = bigram_bits_per_byte(t, v);
  y.xz_bits_per_byte = xz_bits_per_byte(u32_to_utf8(t), v8);
  return y;
}

}  // namespace glass
