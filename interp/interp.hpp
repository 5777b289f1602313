#pragma once
// The interpretability lab in one include: hook-based tools on the reference path.
#include "interp/ablation.hpp"              // zero and mean ablation of heads, Δloss table
#include "interp/attribution_patching.hpp"  // the gradient estimate of patching, Spearman
#include "interp/head_scores.hpp"           // previous-token, induction, attention-sink scores
#include "interp/logit_attribution.hpp"     // direct logit attribution: parts of a logit
#include "interp/logit_lens.hpp"            // the residual stream read through the output head
#include "interp/patching.hpp"              // activation patching, recovered logit difference
#include "interp/record.hpp"  // the per-save record: head scores and ablation over training
#include "interp/run.hpp"     // prompts as token ids, hook-point names
