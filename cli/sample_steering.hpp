#pragma once
// `glass sample --sae FILE --steer LATENT=SCALE`: steering generation with an SAE's latents
// (interp/steering.hpp). The flags, their checks in the command's words, and the tracer whose
// hook adds the latents' directions to the residual stream at the SAE's point.

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "checkpoint/checkpoint.hpp"
#include "interp/steering.hpp"
#include "train/sae_file.hpp"

namespace glass::cli {

/// The steering flags as given.
struct SteerFlags {
  std::string sae;                  ///< --sae FILE
  std::vector<std::string> steers;  ///< --steer LATENT=SCALE, each as given
};

/// Adds --sae and --steer (repeatable) to `cmd`.
void add_steer_flags(CLI::App* cmd, SteerFlags& f);

/// The steers of the flags, checked before anything is loaded: CommandError for --steer
/// without --sae (or --sae without --steer), a value that is not LATENT=SCALE with LATENT a
/// non-negative integer and SCALE a number, and a scale that is not finite.
std::vector<Steer> parse_steers(const SteerFlags& f);

/// A loaded SAE and the tracer that steers with it; the tracer must outlive generation.
struct Steering {
  LoadedSae sae;
  Tracer tracer;
  std::string note;  ///< what is steered, for standard error
};

/// Loads the SAE (checked against the model: CommandError as `glass sae` words it), checks the
/// latents against it and builds the tracer. nullptr when `steers` is empty.
std::unique_ptr<Steering> make_steering(const SteerFlags& f, const std::vector<Steer>& steers,
                                        const Checkpoint& loaded);

}  // namespace glass::cli
