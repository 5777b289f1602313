#pragma once
// The Trainer's typed errors (train/errors.hpp) in the words of `glass train`'s command line:
// the library states the facts (which option field, which value), the command names the flags.

#include <exception>
#include <optional>
#include <string>

namespace glass::cli {

/// The flag that sets a TrainOptions field ("batch_size" -> "--batch-size",
/// "model.d_model" -> "--d-model", "bpe_vocab_size" -> "--vocab-size").
std::string flag_of(const std::string& field);

/// A Trainer error (ModelConfigError, OptionError, RecipeMismatchError, DataMismatchError,
/// OverfitBatchRunError, FinishedRunError, OptimizerMismatchError of weight_decay, OutOfMemoryError,
/// NoSaveToResumeError, RunExistsError) in the words of the command line: the flags of its
/// fields and what to pass. std::nullopt for any other error (its message is already the user's).
std::optional<std::string> in_flag_words(const std::exception& e);

}  // namespace glass::cli
