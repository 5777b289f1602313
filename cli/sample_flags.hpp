#pragma once
// The sampler's flags, shared by the commands that draw tokens (glass sample, glass chat):
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n.

#include <CLI/CLI.hpp>

#include "sample/sampler.hpp"

namespace glass::cli {

/// Adds the sampler's flags to `cmd`, writing into `sampling` (its defaults shown in the help).
void add_sampler_flags(CLI::App* cmd, glass::SamplingOptions& sampling);

}  // namespace glass::cli
