#pragma once
// What a resumed run continues, decided in one place: the save (the one DIR/current points to;
// when that link is missing, or does not lead to a complete save, the newest complete save), the
// recipe and training context that save records, the text it was trained on, and what cannot be
// resumed at all. The Trainer asks it.

#include <optional>
#include <string>

#include "nn/config.hpp"
#include "train/options.hpp"
#include "train/train_state.hpp"

namespace glass {

/// The recipe `o` trains with, as a save records it (TrainState::recipe).
TrainRecipe recipe_of(const TrainOptions& o);

/// The save a resume of one run directory continues.
class Resume {
 public:
  /// Locates the save in `out_dir` as every reader does (save_to_read, checkpoint/run_dir.hpp):
  /// out_dir itself when DIR/current leads to a complete save (or out_dir holds a checkpoint of
  /// the flat layout); else, when `current` is missing, dangling, or leads to a file or to a save
  /// that did not complete, the newest complete save, which the Trainer links again. Reads only
  /// the directory's entries and the saves' manifests; never throws.
  explicit Resume(const std::string& out_dir);

  /// Refuses a run that cannot be resumed: overfit_batch (a check of the loop, not a run to
  /// continue), a time budget (it chooses a new run's step count) or overwrite (which starts a
  /// new run) with resume. Throws OptionError.
  static void check_resumable(const TrainOptions& o);

  /// The directory whose files the resume reads.
  const std::string& save_dir() const { return save_dir_; }
  /// The name of that save when DIR/current must point to it again ("" when the link is right).
  const std::string& relink() const { return relink_; }
  /// One line for the user saying why the link is restored ("" when it is not).
  const std::string& note() const { return note_; }
  /// True when save_dir() holds a checkpoint with a training state.
  bool has_save() const;
  /// Throws NoSaveToResumeError when it does not.
  void require_save() const;

  /// Takes back what the save records into `o`: each recipe field not given (o.recipe_given)
  /// takes the recorded value, and one given must equal it (a rate equal but for the last bits of
  /// its decimal spelling, relative 1e-12, is the recorded rate); the context, when not given, is
  /// the recorded training context (another context is allowed: the Trainer warns); with
  /// o.iters_from_save, iters is the recorded step count (when the save records one). A save
  /// written before the recipe was recorded keeps the values as given. Throws
  /// OverfitBatchRunError when the save records an overfit_batch run,
  /// RecipeMismatchError listing every field that differs, DataMismatchError when the save
  /// records another text's file name than o.data_path's, CheckpointError when a recorded file
  /// cannot be parsed, OptionError when a chat fine-tune is resumed as a text run or the other
  /// way round (a fine-tune's recorded base is taken into o.chat). Nothing is read when out_dir
  /// holds no save (require_save says so).
  void take_recorded(TrainOptions& o) const;

 private:
  // A chat fine-tune is resumed as one, a text run as one (OptionError otherwise); the base a
  // fine-tune recorded is taken into o.chat.
  void take_chat_base(TrainOptions& o, const TrainRecipe& recorded) const;
  std::string out_dir_, save_dir_, relink_, note_;
};

}  // namespace glass
