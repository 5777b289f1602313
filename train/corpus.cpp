// The text a run learns from. See train/corpus.hpp.

#include "train/corpus.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>

#include "checkpoint/model_size.hpp"
#include "data/text.hpp"
#include "train/errors.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// The shortest text whose validation part (the last 10%) still holds context + 1 characters.
std::size_t min_text_length(std::size_t context) {
  std::size_t n = context + 1;
  while (n - static_cast<std::size_t>(static_cast<double>(n) * 0.9) < context + 1) ++n;
  return n;
}

/// Refuses a text file whose loading cannot fit in the memory available now. Reading holds the
/// file's bytes plus 4 bytes per character (the decoded code points); encoding holds those 4
/// plus 1 or 2 per id: about 5 bytes per byte of the file at the peak (measured: 5.2 for a 40 MB
/// text), after which only the ids stay. Checked before reading, so the message comes at once.
void check_text_fits_in_memory(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) return;  // not a regular file (a pipe): load_text reports what is wrong
  const double need = 5.0 * static_cast<double>(size);
  const double have = available_memory_bytes();
  if (have > 0 && need > have)
    throw std::runtime_error(fmt::format(
        "{} is {}; reading and encoding it needs about {} of memory but only {} is available now. "
        "Use a smaller part of the text or free some memory.",
        path, format_bytes(static_cast<double>(size)), format_bytes(need), format_bytes(have)));
}

/// The note on the characters that became the unknown id 0, and a hint when they are more than
/// 1% of the text: the model can neither learn nor write them.
std::string unknown_note(const TrainOptions& o, std::size_t unknown, std::size_t text_chars,
                         bool resuming) {
  const double share = static_cast<double>(unknown) / static_cast<double>(text_chars);
  std::string note = fmt::format(
      "note: {} has more distinct characters than the vocabulary holds ({} with the unknown "
      "id 0); {} occurrences of the rarest ones ({:.2f}% of the text) become the unknown token\n",
      o.data_path, o.model.vocab_cap, unknown, 100.0 * share);
  if (share <= 0.01) return note;
  if (resuming)
    return note +
           "hint: more than 1% of the text is unknown to this checkpoint's vocabulary, which a "
           "resumed run cannot grow; a new run with a larger --vocab-cap keeps more "
           "characters\n";
  return note + fmt::format(
                    "hint: more than 1% of the text becomes the unknown token, which the model "
                    "can neither learn nor write. Raise --vocab-cap (now {}) to keep more "
                    "characters; each costs one row of the embedding and of the output layer\n",
                    o.model.vocab_cap);
}

}  // namespace

std::u32string read_training_text(const TrainOptions& o, std::ostream& out) {
  TextInfo info;
  check_text_fits_in_memory(o.data_path);
  std::u32string text = load_text(o.data_path, &info);
  if (info.had_bom)
    out << "note: dropped the UTF-8 byte-order mark at the start of " << o.data_path << "\n";
  if (info.crlf_converted > 0)
    out << "note: converted " << info.crlf_converted << " CRLF line endings to LF\n";
  // A fresh model's context length is known now: say that first, not "the text is too short".
  if (!o.resume && o.context > o.model.context_length)
    throw OptionError(
        "context", std::to_string(o.context),
        fmt::format("is longer than the model's context length {}", o.model.context_length));
  const std::size_t need = min_text_length(o.context);
  if (text.size() < need)
    throw std::runtime_error(fmt::format(
        "{} holds {} characters; with a context of {} it must hold at least {} (the last 10% is "
        "the validation split and needs context + 1 = {} characters). Use a longer text or a "
        "smaller context.",
        o.data_path, text.size(), o.context, need, o.context + 1));
  return text;
}

TextTokenizer new_tokenizer(const std::u32string& text, TrainOptions& o) {
  // The kind the user chose: the one place a tokenizer is made by kind.
  if (o.tokenizer == TokenizerKind::kBpe) {
    std::optional<TextTokenizer> bpe;
    try {
      bpe.emplace(BpeTokenizer::train(text.substr(0, split_point(text, TokenizerKind::kBpe)),
                                      o.bpe_vocab_size));
    } catch (const std::invalid_argument& e) {
      throw OptionError("bpe_vocab_size", std::to_string(o.bpe_vocab_size),
                        std::string("cannot be had from this text: ") + e.what());
    }
    o.model.vocab_size = bpe->vocab_size();
    o.model.vocab_cap = std::max(o.model.vocab_cap, o.model.vocab_size);  // a cap of characters
    o.model.validate();
    return std::move(*bpe);
  }
  TextTokenizer chars(Tokenizer::from_text(text, o.model.vocab_cap));
  o.model.vocab_size = chars.vocab_size();
  o.model.validate();  // std::invalid_argument naming the bad size, before any allocation
  return chars;
}

Corpus encode_corpus(const TextTokenizer& tokenizer, std::u32string text, const TrainOptions& o,
                     bool resuming, std::ostream& out) {
  // A text with more distinct characters than the vocabulary cap keeps the most frequent ones;
  // the rarest become the unknown token (id 0). That also holds when resuming a checkpoint whose
  // vocabulary is full. Otherwise a character the checkpoint never saw is an error.
  const bool vocab_full = tokenizer.vocab_size() >= o.model.vocab_cap;
  SplitIds split;
  try {
    split = tokenizer.encode_split(
        text, !resuming || vocab_full ? UnknownPolicy::kMapToUnknownId : UnknownPolicy::kRefuse);
  } catch (const UnknownCharacterError& e) {
    throw std::runtime_error(
        fmt::format("{} does not match the checkpoint's vocabulary: {}", o.data_path, e.what()));
  }
  if (split.unknown > 0) out << unknown_note(o, split.unknown, text.size(), resuming);
  const std::size_t val_tokens = split.ids.size() - split.n_train;
  if (std::min(split.n_train, val_tokens) < o.context + 1)
    throw OptionError(
        "context", std::to_string(o.context),
        fmt::format("needs at least {} {}s (one window plus the next one to predict), but the {} "
                    "split of {} has {}; a {} holds {:.2f} characters of this text on average. Use "
                    "a longer text or a smaller context",
                    o.context + 1, tokenizer.unit(false),
                    split.n_train < val_tokens ? "training" : "validation", o.data_path,
                    std::min(split.n_train, val_tokens), tokenizer.unit(false),
                    static_cast<double>(text.size()) / static_cast<double>(split.ids.size())));
  // The text is no longer needed: only the ids are kept, once, shared by the samplers.
  text = std::u32string();
  split.ids.shrink_to_fit();
  return {std::make_shared<const TokenIds>(std::move(split.ids)), split.n_train, split.val_bytes};
}

}  // namespace glass
