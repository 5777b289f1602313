#pragma once
// Answers to mistakes on the command line: "did you mean ...?" for a misspelt command or flag
// (by edit distance), the command's usage line, and the habits of other tools that mean
// something else here (llama.cpp's -ngl).

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Edit distance between a and b: insertions, deletions, substitutions and swaps of two
/// neighbours each cost 1 (optimal string alignment; "trian" is 1 from "train").
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate nearest to `word` when it is close enough to be a typo (distance <= 2, and
/// less than half of the word's length), else nothing. Ties: the first candidate.
std::optional<std::string> nearest(const std::string& word,
                                   const std::vector<std::string>& candidates);

/// A validator of a flag with a few named choices (`what` names them: "optimizer"): takes a
/// choice in any case and passes it on as spelt in `choices`; any other value fails with
/// "unknown optimizer 'adamx'; did you mean adamw? (the optimizers: adamw, muon)" (nearest),
/// which CLI11 prints after the flag's name.
CLI::Validator one_of(std::vector<std::string> choices, const std::string& what);

/// "usage: glass sample --checkpoint TEXT [OPTIONS]": the command's required options, then the rest.
std::string usage_line(const CLI::App& cmd);

/// The first flag in argv[first, argc) that `cmd` does not know ("--iter" of "--iter=10"), or
/// "" if every flag is known. Tokens that are not flags (values, "-", negative numbers) and
/// everything after "--" are skipped.
std::string unknown_flag(const CLI::App& cmd, int argc, char** argv, int first);

/// The message for an unknown flag: "glass train: unknown flag --iter; did you mean --iters?",
/// the usage line and a pointer to --help (three lines, no trailing newline).
std::string unknown_flag_message(const CLI::App& cmd, const std::string& flag);

/// A single-dash word among argv[first, argc) that CLI11 would misread, e.g. "-temp" (read as -t
/// with the value "emp"): a word whose first letter is no short flag of `cmd`, a word that is
/// one of cmd's long flags with one dash ("-prompt"), or a word attached to a numeric short
/// flag whose two-dash spelling is near a long flag ("-tmep"). Returns the message ("glass
/// sample: unknown flag -temp; did you mean --temp? ...", as unknown_flag_message) or "".
/// Values of the flag before ("-p -temp") and everything after "--" are skipped; short flags
/// with their value attached ("-n5", "-pOnce") and clusters of short flags are left alone.
std::string single_dash_word_message(const CLI::App& cmd, int argc, char** argv, int first);

/// An option that takes a value given twice or more among argv[first, argc) ("--context 64
/// --context 32", or two spellings of one option: "-n 5 --tokens 9"), which CLI11 refuses:
/// "glass train: --context given twice (--context 64, then --context 32); give it once", or ""
/// when none is. Options that may repeat (switches, lists) are left alone.
std::string repeated_option_message(const CLI::App& cmd, int argc, char** argv, int first);

/// The message for a required option that was not given: its spellings, its help and, when an
/// argument with no flag names a directory (a checkpoint) or a file (a text), the flag it
/// probably lacks: "glass sample: -m/--checkpoint is required: checkpoint ...; 'runs/x' is a directory:
/// did you mean -m runs/x?", the usage line and a pointer to --help. "" when every required
/// option of `cmd` was given (the error is another one).
std::string missing_option_message(const CLI::App& cmd, int argc, char** argv, int first);

/// A GPU-offload flag of llama.cpp (-ngl, --n-gpu-layers, --gpu-layers, with or without
/// =VALUE) anywhere in argv: a sentence saying that GlassLLM runs on the CPU, else "". Checked
/// before the parser, which would read -ngl as -n gl.
std::string gpu_flag_message(int argc, char** argv);

}  // namespace glass::cli
