// BPE tokenizer speed (data/bpe_tokenizer.hpp): training on a corpus to a vocabulary size and
// encoding the whole corpus, each repeated --reps times (median, min, max), one thread.
//   bench_bpe [--corpus PATH] [--vocab N] [--reps N]     (default tinyshakespeare, 1024, 5)
//   bench_bpe --lengths PATH                             the text's length in tokens for vocab
//                                                        384/512/1024/2048, and the first 20 merges
//   bench_bpe --largest [--reps N]                       reading the largest tokenizer.json glass
//                                                        accepts (kMaxVocabSize tokens, up to
//                                                        kMaxTokenLength characters): s per MB
// Encoding throughput is in MB of UTF-8 text per second; each encode starts with an empty word
// cache (the cache lives for one call), so the figure includes encoding every distinct word once.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/file_limits.hpp"
#include "data/text.hpp"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// This thread's CPU time in seconds (on a busy machine, closer to the code's own cost than the
/// wall clock).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Stats {
  double median, min, max;
};

Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

void lengths(const std::string& path) {
  const std::u32string text = glass::load_text(path);
  const std::size_t bytes = glass::u32_to_utf8(text).size();
  std::printf("%s: %zu characters, %zu bytes\n", path.c_str(), text.size(), bytes);
  std::printf("| vocab_size | merges | tokens | characters per token | bytes per token |\n");
  std::printf("|---|---|---|---|---|\n");
  for (std::size_t v : {384, 512, 1024, 2048}) {
    const glass::BpeTokenizer tok = glass::BpeTokenizer::train(text, v);
    const std::size_t n = tok.encode(text).size();
    std::printf("| %zu | %zu | %zu | %.2f | %.2f |\n", v, tok.merges().size(), n,
                static_cast<double>(text.size()) / static_cast<double>(n),
                static_cast<double>(bytes) / static_cast<double>(n));
  }
  const glass::BpeTokenizer tok = glass::BpeTokenizer::train(text, 2048);
  std::printf("first 20 merges:");
  for (std::int32_t r = 0; r < 20 && r < static_cast<std::int32_t>(tok.merges().size()); ++r) {
    const glass::BpeMerge m = tok.merges()[static_cast<std::size_t>(r)];
    std::printf(" %s+%s", tok.token_text(m.left).c_str(), tok.token_text(m.right).c_str());
  }
  std::printf("\n");
}

/// A vocabulary of kMaxVocabSize tokens, the largest glass reads: '▁' and 1024 CJK characters,
/// then chains of merges that each add one character, up to kMaxTokenLength characters (token
/// texts 2..16 characters, 3 bytes each in UTF-8): for each first character, 17 chains that
/// differ in their second character, so every text is new.
glass::BpeTokenizer largest_vocabulary() {
  std::vector<char32_t> chars = {glass::BpeTokenizer::kSpaceMark};
  for (char32_t c = 0x4E00; c < 0x4E00 + 1024; ++c) chars.push_back(c);
  const std::size_t n_merges = glass::kMaxVocabSize - 259 - chars.size();
  std::vector<glass::BpeMerge> merges;
  const auto id_of_char = [](std::size_t i) { return static_cast<std::int32_t>(260 + i); };
  std::int32_t next = static_cast<std::int32_t>(259 + chars.size());
  for (std::size_t first = 0; first < 1024 && merges.size() < n_merges; ++first)
    for (std::size_t branch = 0; branch < 17 && merges.size() < n_merges; ++branch) {
      std::int32_t left = id_of_char(first);
      for (std::size_t k = 0; k + 1 < glass::kMaxTokenLength && merges.size() < n_merges; ++k) {
        merges.push_back({left, id_of_char((first + branch + 1 + k) % 1024)});
        left = next++;
      }
    }
  return glass::BpeTokenizer(std::move(chars), std::move(merges));
}

/// --largest: builds the tokenizer of the largest tokenizer.json glass accepts, `reps` times.
void largest(int reps) {
  const std::string text = glass::bpe_to_json(largest_vocabulary());
  const double mb = static_cast<double>(text.size()) / 1e6;
  std::vector<double> wall, cpu;
  std::size_t vocab = 0;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    vocab = glass::bpe_from_json(text, "largest tokenizer.json").vocab_size();
    cpu.push_back(thread_cpu_seconds() - c0);
    wall.push_back(seconds_since(t0));
  }
  const Stats w = stats(wall), c = stats(cpu);
  std::printf("largest accepted tokenizer.json: %zu tokens, %.1f MB\n", vocab, mb);
  std::printf(
      "read and build: median %.3f s wall = %.3f s per MB (min %.3f, max %.3f), thread "
      "CPU %.3f s = %.3f s per MB, %d runs\n",
      w.median, w.median / mb, w.min, w.max, c.median, c.median / mb, reps);
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus = GLASS_SOURCE_DIR "/data/corpora/tinyshakespeare.txt";
  std::size_t vocab = 1024;
  int reps = 5;
  bool largest_requested = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--corpus" && has_value)
      corpus = argv[++i];
    else if (a == "--vocab" && has_value)
      vocab = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--reps" && has_value)
      reps = std::max(1, std::atoi(argv[++i]));
    else if (a == "--largest") {
      largest_requested = true;
    } else if (a == "--lengths" && has_value) {
      lengths(argv[++i]);
      return 0;
    } else {
      std::fprintf(stderr,
                   "usage: bench_bpe [--corpus PATH] [--vocab N] [--reps N] | --lengths PATH "
                   "| --largest [--reps N]\n");
      return 2;
    }
  }
  if (largest_requested) {
    try {
      largest(reps);
      return 0;
    } catch (const std::exception& ex) {
      std::fprintf(stderr, "bench_bpe: %s\n", ex.what());
      return 1;
    }
  }
  try {
    const std::u32string text = glass::load_text(corpus);
    const double mb = static_cast<double>(glass::u32_to_utf8(text).size()) / 1e6;
    std::vector<double> train_s, encode_s, train_cpu, encode_cpu;
    glass::BpeTokenizer tok;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = thread_cpu_seconds();
      tok = glass::BpeTokenizer::train(text, vocab);
      train_cpu.push_back(thread_cpu_seconds() - c0);
      train_s.push_back(seconds_since(t0));
    }
    std::size_t n_tokens = 0;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = thread_cpu_seconds();
      n_tokens = tok.encode(text).size();
      encode_cpu.push_back(thread_cpu_seconds() - c0);
      encode_s.push_back(seconds_since(t0));
    }
    const Stats t = stats(train_s), e = stats(encode_s);
    const Stats tc = stats(train_cpu), ec = stats(encode_cpu);
    std::printf("corpus %s: %.3f MB, %zu characters -> %zu tokens (vocab %zu, %zu merges)\n",
                corpus.c_str(), mb, text.size(), n_tokens, tok.vocab_size(), tok.merges().size());
    std::printf("train to %zu: median %.3f s (min %.3f, max %.3f), %d runs\n", vocab, t.median,
                t.min, t.max, reps);
    std::printf("encode: median %.3f s = %.1f MB/s (min %.3f s, max %.3f s), %d runs\n", e.median,
                mb / e.median, e.min, e.max, reps);
    std::printf("CPU time (this thread): train median %.3f s, encode median %.3f s = %.1f MB/s\n",
                tc.median, ec.median, mb / ec.median);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "bench_bpe: %s\n", ex.what());
    return 1;
  }
  return 0;
}
