// make_chat_tasks: writes the chat task set (data/chat_tasks.hpp) as train.jsonl, val.jsonl and
// exam.jsonl into a folder. Deterministic: the same corpus and options give the same bytes.
//
//   make_chat_tasks [--corpus data/corpora/domcasmurro.txt] [--seed 1] [--train 3000]
//                   [--val 250] [--exam 250] --out data/chat

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "data/chat_tasks.hpp"
#include "data/text.hpp"

namespace {

const char* const kUsage =
    "usage: make_chat_tasks [--corpus FILE] [--seed N] [--train N] [--val N] [--exam N] "
    "--out DIR\n"
    "Writes DIR/train.jsonl, DIR/val.jsonl and DIR/exam.jsonl: Portuguese conversations made\n"
    "from templates and the corpus's words (default data/corpora/domcasmurro.txt), seed 1,\n"
    "3000/250/250 conversations.\n";

/// A non-negative whole number, or exit 2 naming the flag.
std::uint64_t number(const std::string& flag, const std::string& value) {
  std::size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || value[0] == '-') {
    std::fprintf(stderr, "make_chat_tasks: %s needs a whole number, got \"%s\"\n", flag.c_str(),
                 value.c_str());
    std::exit(2);
  }
  return n;
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) {
  std::string corpus = "data/corpora/domcasmurro.txt", out;
  glass::ChatTaskOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "make_chat_tasks: %s needs a value\n%s", flag.c_str(), kUsage);
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--corpus") {
      corpus = value;
    } else if (flag == "--out") {
      out = value;
    } else if (flag == "--seed") {
      options.seed = number(flag, value);
    } else if (flag == "--train") {
      options.n_train = number(flag, value);
    } else if (flag == "--val") {
      options.n_val = number(flag, value);
    } else if (flag == "--exam") {
      options.n_exam = number(flag, value);
    } else {
      std::fprintf(stderr, "make_chat_tasks: unknown option %s\n%s", flag.c_str(), kUsage);
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "make_chat_tasks: --out DIR is required\n%s", kUsage);
    return 2;
  }
  try {
    const glass::ChatTaskSplits splits = glass::make_chat_tasks(glass::load_text(corpus), options);
    std::filesystem::create_directories(out);
    write(std::filesystem::path(out) / "train.jsonl", splits.train);
    write(std::filesystem::path(out) / "val.jsonl", splits.val);
    write(std::filesystem::path(out) / "exam.jsonl", splits.exam);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_chat_tasks: %s\n", e.what());
    return 1;
  }
  std::printf("wrote %s/train.jsonl, val.jsonl, exam.jsonl\n", out.c_str());
  return 0;
}
