// The checks of TrainOptions. See train/options.hpp.

#include "train/options.hpp"

#include <cmath>

#include <fmt/format.h>

#include "train/errors.hpp"

namespace glass {

namespace {

void positive(long v, const char* field) {
  if (v <= 0) throw OptionError(field, std::to_string(v), "must be a positive integer");
}

}  // namespace

const char* optimizer_name(OptimizerKind kind) {
  return kind == OptimizerKind::muon ? "muon" : "adamw";
}

std::optional<OptimizerKind> optimizer_from_name(const std::string& name) {
  if (name == "adamw") return OptimizerKind::adamw;
  if (name == "muon") return OptimizerKind::muon;
  return std::nullopt;
}

bool use_speedrun_recipe(TrainOptions& o, bool zero_init_given) {
  if (o.recipe_given.optimizer) return false;
  o.optimizer = OptimizerKind::muon;
  if (!zero_init_given) o.zero_init_out = true;
  o.speedrun_recipe = true;
  return true;
}

void validate_options(TrainOptions& o) {
  positive(o.iters, "iters");
  if (!(o.time_budget_s >= 0) || !std::isfinite(o.time_budget_s))
    throw OptionError("time", fmt::format("{:g}", o.time_budget_s),
                      "must be a duration of 0 s (none) or more");
  positive(static_cast<long>(o.batch_size), "batch_size");
  positive(static_cast<long>(o.context), "context");
  positive(o.eval_every, "eval_every");
  positive(o.eval_iters, "eval_iters");
  if (o.eval_iters > kMaxEvalIters)
    throw OptionError("eval_iters", std::to_string(o.eval_iters),
                      fmt::format("must be at most {}: each evaluation runs that many batches per "
                                  "split",
                                  kMaxEvalIters));
  if (o.sample_tokens > kMaxSampleTokens)
    throw OptionError("sample_tokens", std::to_string(o.sample_tokens),
                      fmt::format("must be at most {}", kMaxSampleTokens));
  if (o.decay_iters < 0) o.decay_iters = o.iters;
  positive(o.decay_iters, "decay_iters");
  if (o.warmup < 0) throw OptionError("warmup", std::to_string(o.warmup), "must be >= 0");
  if (!(o.lr > 0) || !std::isfinite(o.lr))
    throw OptionError("lr", fmt::format("{:g}", o.lr), "must be a positive number");
  if (!(o.muon_lr > 0) || !std::isfinite(o.muon_lr))
    throw OptionError("muon_lr", fmt::format("{:g}", o.muon_lr), "must be a positive number");
  // Muon's rate given to an AdamW run (a new one, or the save a resume continues) would do nothing.
  if (o.recipe_given.muon_lr && o.optimizer != OptimizerKind::muon)
    throw OptionError("muon_lr", fmt::format("{:g}", o.muon_lr),
                      "applies to the muon optimizer only");
  if (o.min_lr < 0) o.min_lr = o.lr / 10;
  if (o.min_lr > o.lr)
    throw OptionError("min_lr", fmt::format("{}", o.min_lr),
                      fmt::format("must not exceed the peak learning rate {}", o.lr), "lr");
  if (o.weight_decay < 0)
    throw OptionError("weight_decay", fmt::format("{:g}", o.weight_decay), "must be >= 0");
  if (o.grad_clip < 0)
    throw OptionError("grad_clip", fmt::format("{:g}", o.grad_clip), "must be >= 0 (0 = off)");
  const auto ranks = static_cast<std::size_t>(o.comm.size());
  if (o.batch_size % ranks != 0)
    throw OptionError("batch_size", std::to_string(o.batch_size),
                      fmt::format("is the batch of all {} processes together and must divide "
                                  "evenly among them (each takes batch_size / {} windows): use a "
                                  "multiple of {}",
                                  ranks, ranks, ranks));
}

}  // namespace glass
