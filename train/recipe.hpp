#pragma once
// The recipe of a run: what a run records of its flags (the learning-rate schedule, the batch
// size, the clip; train_state.json's "recipe", the training window and the text's name in
// config.json), and how --resume takes it back or refuses a flag that asks for another value.

#include "train/train_state.hpp"
#include "train/trainer.hpp"

namespace glass {

/// The recipe `o` trains with, as a save records it (TrainState::recipe).
TrainRecipe recipe_of(const TrainOptions& o);

/// Which flags of the recipe the command line gave. On --resume a flag left out takes the
/// recorded value; one given must agree with it.
struct RecipeFlagsGiven {
  bool lr = false, min_lr = false, warmup = false, decay_iters = false, batch_size = false,
       grad_clip = false, context = false;
};

/// --resume continues the recipe the run was trained with (recorded in train_state.json of
/// o.out_dir): a flag of the recipe that is not given takes the recorded value; one that is given
/// must equal it, else the resumed run would not be the same run (std::invalid_argument listing
/// each such flag with both values, and saying what to pass). A rate that differs from the
/// recorded one only in the last bits of its decimal spelling (relative 1e-12) is the recorded
/// rate. Checkpoints written before the recipe was recorded are resumed with the flags as given.
/// --context, when not given, is the recorded training context too (config.json); another
/// --context is allowed (the Trainer warns). Throws CheckpointError when train_state.json
/// exists but cannot be parsed.
void take_recorded_recipe(TrainOptions& o, const RecipeFlagsGiven& given);

/// The text is part of the run: resuming on another one would not continue the same run.
/// config.json of o.out_dir records the text's file name; a resume whose o.data_path has another
/// file name throws std::invalid_argument naming both (`data_defaulted`: o.data_path is the
/// bundled corpus because --data was left out, which the message says). Nothing is checked when
/// out_dir holds no readable checkpoint (the Trainer then says so) or records no name.
void check_recorded_data(const TrainOptions& o, bool data_defaulted);

}  // namespace glass
