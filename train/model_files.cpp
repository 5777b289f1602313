// The Trainer's writing of a save's model files. See train/model_files.hpp.

#include "train/model_files.hpp"

#include "checkpoint/checkpoint.hpp"

namespace glass {

void save_model_files(const std::string& dir, const Decoder& model, const TextTokenizer& tokenizer,
                      const std::string& extra_json, long step, const std::string& run_id) {
  // The two kinds are saved by two overloads (a BPE model also writes tokenizer.json).
  if (const BpeTokenizer* bpe = tokenizer.bpe())
    save_model(dir, model, *bpe, "model.safetensors", extra_json, step, run_id);
  else
    save_model(dir, model, *tokenizer.chars(), "model.safetensors", extra_json, step, run_id);
}

}  // namespace glass
