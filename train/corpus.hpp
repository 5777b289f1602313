#pragma once
// The text a run learns from: read from its file (checked against the memory available and the
// window), given a tokenizer (a new run's, made from the text), and encoded once into ids split
// into training and validation.

#include <iosfwd>
#include <memory>
#include <string>

#include "data/text_tokenizer.hpp"
#include "data/token_ids.hpp"
#include "train/options.hpp"

namespace glass {

/// The whole text's ids, kept once and shared by the batch samplers of both splits.
struct Corpus {
  std::shared_ptr<const TokenIds> ids;  ///< 1, 2 or 4 bytes per id
  std::size_t n_train = 0;              ///< ids[0, n_train) train, the rest validates
  std::size_t val_bytes = 0;            ///< UTF-8 bytes of the validation split's text
  std::size_t val_tokens() const { return ids->size() - n_train; }
};

/// Reads o.data_path (notes on a dropped byte-order mark and converted CRLFs go to `out`).
/// Throws std::runtime_error when the file cannot fit in the memory available or holds too few
/// characters for o.context (the validation tenth needs context + 1), OptionError (field
/// "context") when a new model's context_length is shorter than o.context, and load_text's
/// errors (FileError, invalid UTF-8).
std::u32string read_training_text(const TrainOptions& o, std::ostream& out);

/// The tokenizer of a new run, made from its text: o.tokenizer's kind, a BPE vocabulary of
/// o.bpe_vocab_size trained on the training split only (so the validation text stays unseen by
/// the tokenizer too), or the text's characters up to o.model.vocab_cap. Sets o.model.vocab_size
/// (and raises a BPE run's vocab_cap to it) and validates the model's configuration. Throws
/// OptionError (bpe_vocab_size) for a vocabulary size the text cannot have, std::invalid_argument
/// for a bad model configuration.
TextTokenizer new_tokenizer(const std::u32string& text, TrainOptions& o);

/// `text` encoded and split (TextTokenizer::encode_split), then freed. A resumed run (`resuming`)
/// cannot grow its vocabulary: a character it never saw is an error, unless the vocabulary is
/// full (then, as in a new run, the rarest characters become the unknown id 0, said on `out`).
/// Throws std::runtime_error naming the file for a character the checkpoint lacks, OptionError
/// (context) when a split holds fewer than context + 1 ids.
Corpus encode_corpus(const TextTokenizer& tokenizer, std::u32string text, const TrainOptions& o,
                     bool resuming, std::ostream& out);

}  // namespace glass
