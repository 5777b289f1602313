#pragma once
// What the `glass sae` subcommands share (sae.cpp, sae_inspect.cpp): the text a checkpoint
// trained on, and an SAE file loaded with its errors in the command's words.

#include <string>

#include <CLI/CLI.hpp>

#include "checkpoint/checkpoint.hpp"
#include "train/sae_file.hpp"

namespace glass::cli {

/// The text the checkpoint was trained on: config.json's training.data, looked for as given and
/// in data/corpora next to the program (or one level up). CommandError when it is not found.
std::string training_text(const glass::Checkpoint& loaded);

/// The SAE file, verified against its manifest and the model (SaeFileError -> CommandError).
glass::LoadedSae load_sae_or_explain(const std::string& path, const glass::Checkpoint& loaded,
                                     const std::string& point);

/// Adds `glass sae inspect` under `sae` (sae_inspect.cpp).
void add_sae_inspect(CLI::App* sae);

}  // namespace glass::cli
