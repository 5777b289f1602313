// The steering flags of `glass sample` (see sample_steering.hpp).

#include "cli/sample_steering.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/sae_files.hpp"

namespace glass::cli {

void add_steer_flags(CLI::App* cmd, SteerFlags& f) {
  cmd->add_option("--sae", f.sae,
                  "SAE file written by glass sae train, whose latents --steer adds");
  cmd->add_option("--steer", f.steers,
                  "LATENT=SCALE: add SCALE times the latent's unit decoder direction to the "
                  "residual stream at the SAE's point, at every position (repeat for several; "
                  "needs --sae; runs the attention's reference path)")
      ->take_all()
      ->allow_extra_args(false);
}

namespace {

Steer parse_one(const std::string& text) {
  const std::size_t eq = text.find('=');
  const std::string latent = eq == std::string::npos ? "" : text.substr(0, eq);
  const std::string scale = eq == std::string::npos ? "" : text.substr(eq + 1);
  const bool digits = !latent.empty() && latent.size() <= 9 &&
                      latent.find_first_not_of("0123456789") == std::string::npos;
  char* end = nullptr;
  errno = 0;
  const double value = scale.empty() ? 0.0 : std::strtod(scale.c_str(), &end);
  if (!digits || scale.empty() || end != scale.c_str() + scale.size())
    throw CommandError(fmt::format(
        "--steer '{}' is not LATENT=SCALE (a latent number and a number, e.g. --steer 7=4 or "
        "--steer 12=-2.5)",
        text));
  if (!std::isfinite(value) || errno == ERANGE)
    throw CommandError(
        fmt::format("--steer '{}': the scale must be a finite number, not {}", text, scale));
  return {static_cast<std::size_t>(std::stoul(latent)), value};
}

}  // namespace

std::vector<Steer> parse_steers(const SteerFlags& f) {
  if (!f.steers.empty() && f.sae.empty())
    throw CommandError("--steer needs --sae FILE: the SAE whose latents' directions it adds");
  if (f.steers.empty() && !f.sae.empty())
    throw CommandError(
        "--sae is only read with --steer LATENT=SCALE (glass sae inspect browses "
        "its latents)");
  std::vector<Steer> steers;
  for (const std::string& s : f.steers) steers.push_back(parse_one(s));
  return steers;
}

std::unique_ptr<Steering> make_steering(const SteerFlags& f, const std::vector<Steer>& steers,
                                        const Checkpoint& loaded) {
  if (steers.empty()) return nullptr;
  auto s = std::make_unique<Steering>();
  s->sae = load_sae_or_explain(f.sae, loaded, "");
  std::string what;
  for (const Steer& st : steers) {
    if (st.latent >= s->sae.sae->n_latents())
      throw CommandError(
          fmt::format("--steer {}={}: latent {} is out of range: the SAE has "
                      "latents 0 to {}",
                      st.latent, st.scale, st.latent, s->sae.sae->n_latents() - 1));
    what += fmt::format("{}latent {} x {}", what.empty() ? "" : " + ", st.latent, st.scale);
  }
  try {
    add_steering_hook(s->tracer, s->sae.point, steering_vector(*s->sae.sae, steers));
  } catch (const std::invalid_argument& e) {
    throw CommandError(fmt::format("--steer: {}", e.what()));
  }
  s->tracer.set_recording(false);
  s->note = fmt::format(
      "steering: {} added at {} (each latent's unit decoder direction times its scale, at every "
      "position; the attention on its reference path)",
      what, s->sae.point);
  return s;
}

}  // namespace glass::cli
