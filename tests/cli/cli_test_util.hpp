// Helpers shared by the tests that run the real `glass` binary (tests/cli/*_test.cpp): the short
// names they use for running and quoting, the tiny model every test trains in seconds, and the
// start of the bundled corpus they train on. Builds on test_util.hpp (files, quoting, running).
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "test_util.hpp"
#include "test_paths.hpp"

namespace glass_test {

/// What one run of `glass` produced (exit code, stdout, stderr).
using CliRun = GlassRun;

/// Shorthand for quote(): these tests quote many paths.
inline std::string q(const std::string& s) { return quote(s); }

/// The flags of the tiny model and recipe the tests train: seconds, not minutes (d_model 32, one
/// layer, 2 query heads and 1 KV head, batch 4 x context 16, 2 evaluation batches, warmup 5).
/// `sample_tokens` characters are sampled at each evaluation.
inline std::string tiny(int sample_tokens = 10) {
  return " --batch-size 4 --context 16 --d-model 32 --n-layers 1 --n-heads 2 --n-kv-heads 1"
         " --ffn-hidden 32 --eval-iters 2 --sample-tokens " +
         std::to_string(sample_tokens) + " --warmup 5";
}

/// The first `bytes` bytes of the bundled Dom Casmurro (extended to the end of a UTF-8
/// character, so the text stays valid).
inline std::string corpus_start(std::size_t bytes = 6000) {
  const std::string corpus = read_file(glass_test::source_dir("/data/corpora/domcasmurro.txt"));
  std::size_t cut = bytes;
  while (cut < corpus.size() && (static_cast<unsigned char>(corpus[cut]) & 0xC0) == 0x80) ++cut;
  return corpus.substr(0, cut);
}

/// How many times `needle` occurs in `text` (overlapping occurrences counted).
inline std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

}  // namespace glass_test
