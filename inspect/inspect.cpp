// The inspector's data: one traced forward pass over a prompt (inspect), then the choices a
// view makes of it — a snapshot's full name, one head's slice, a summary, the top-k next tokens.
// See inspect.hpp.

#include "inspect/inspect.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "autograd/tape.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/text.hpp"
#include "data/visible_text.hpp"
#include "inspect/snapshots.hpp"
#include "inspect/text_cells.hpp"
#include "nn/decoder.hpp"
#include "nn/tracer.hpp"

namespace glass {

using text_cells::join;
using text_cells::starts_with;

namespace {

std::string layer_prefix(std::size_t layer) { return "layers." + std::to_string(layer) + "."; }

/// Copies the 2-D block `index` of a 3-D row-major array.
Array block_of(const Array& a, std::size_t index) {
  const std::size_t rows = a.shape(1), cols = a.shape(2);
  Array out = Array::from_shape({rows, cols});
  std::copy_n(a.data() + index * rows * cols, rows * cols, out.data());
  return out;
}

}  // namespace

bool Inspection::has(const std::string& full_name) const {
  if (full_name == "logits" || full_name == "probs") return true;
  for (const auto& [name, value] : snapshots)
    if (name == full_name) return true;
  return false;
}

const Array& Inspection::get(const std::string& full_name) const {
  if (full_name == "logits") return logits;
  if (full_name == "probs") return probs;
  for (const auto& [name, value] : snapshots)
    if (name == full_name) return value;
  std::vector<std::string> names;
  for (const auto& [name, value] : snapshots) names.push_back(name);
  names.push_back("logits");
  names.push_back("probs");
  throw InspectError("no snapshot named '" + full_name + "'; recorded: " + join(names, ", "));
}

std::string token_label(const std::string& token_text) {
  std::u32string text;
  try {
    text = utf8_to_u32(token_text);
  } catch (const Utf8Error&) {
    return escape_controls(token_text);  // vocabulary texts are valid UTF-8; shown safe if not
  }
  std::string out;
  for (char32_t c : text) out += visible_char(c);
  return out;
}

std::string Inspection::position_label(std::size_t i) const {
  return i < token_texts.size() ? token_label(token_texts[i]) : "?";
}

std::string id_label(const TextTokenizer& tokenizer, std::int32_t id) {
  if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.vocab_size()) return "?";
  if (!tokenizer.has_text(id)) return "<unk>";  // a character model's unknown id 0
  return token_label(tokenizer.token_text(id));
}

std::string Inspection::vocab_label(std::int32_t id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= vocab_texts.size()) return "?";
  return id_label(*tokenizer, id);
}

Inspection inspect(const Checkpoint& loaded, const std::u32string& prompt, UnknownPolicy policy,
                   std::size_t* unknown_count) {
  const ModelConfig& config = loaded.model().config();
  if (prompt.empty()) throw InspectError("the prompt is empty: give at least one character");
  const TextTokenizer& tokenizer = loaded.tokenizer();

  Inspection ins;
  ins.config = config;
  ins.tokenizer = loaded.shared_tokenizer();
  ins.prompt = prompt;
  ins.tokens = loaded.encode_prompt(prompt, policy, unknown_count);  // UnknownCharacterError
  // Each position's text: the vocabulary's; the unknown id 0 (a character model's: one token a
  // character) shows the prompt's own character.
  for (std::size_t i = 0; i < ins.tokens.size(); ++i)
    ins.token_texts.push_back(tokenizer.has_text(ins.tokens[i])
                                  ? tokenizer.token_text(ins.tokens[i])
                                  : char_to_utf8(prompt[i]));
  ins.vocab.assign(config.vocab_size, char32_t(0xFFFD));
  ins.vocab_texts.assign(config.vocab_size, char_to_utf8(0xFFFD));
  for (std::size_t id = 0; id < config.vocab_size && id < tokenizer.vocab_size(); ++id) {
    ins.vocab_texts[id] = tokenizer.token_text(static_cast<std::int32_t>(id));
    // A token is one character unless tokens span several (BPE: vocab_texts alone).
    if (!tokenizer.tokens_span_characters()) ins.vocab[id] = utf8_to_u32(ins.vocab_texts[id])[0];
  }
  if (ins.tokens.size() > config.context_length)
    throw InspectError(fmt::format(
        "the prompt has {} {} but the model's context holds at most {} (context_length)",
        ins.tokens.size(), ins.unit(), config.context_length));

  const std::size_t n = ins.tokens.size();
  Ids ids = Ids::from_shape({std::size_t(1), n});
  std::copy(ins.tokens.begin(), ins.tokens.end(), ids.data());

  Tracer tracer(0);
  Tensor logits;
  {
    NoGradGuard no_grad;
    logits = loaded.model().forward(ids, nullptr, &tracer);
  }
  ins.logits = logits.value();
  ins.logits.reshape({n, config.vocab_size});
  // NaN or +inf logits would show as plausible bars and heatmaps; refuse them (-inf is a
  // legitimate "never this token").
  for (std::size_t i = 0; i < ins.logits.size(); ++i) {
    const Scalar x = ins.logits.data()[i];
    if (std::isnan(x) || x == std::numeric_limits<Scalar>::infinity())
      throw InspectError(fmt::format(
          "the model's logits are not finite ({} at position {}, vocabulary entry {}): its weights "
          "are corrupt or diverged",
          std::isnan(x) ? "NaN" : "+inf", i / config.vocab_size, i % config.vocab_size));
  }
  ins.probs = tracer.get("probs");  // the decoder's softmax of the logits
  ins.probs.reshape({n, config.vocab_size});
  for (const std::string& name : tracer.names())
    if (name != "logits" && name != "probs") ins.snapshots.emplace_back(name, tracer.get(name));
  return ins;
}

std::vector<std::string> snapshot_choices(const Inspection& ins, std::size_t layer) {
  if (layer >= ins.config.n_layers)
    throw InspectError(fmt::format("layer {} is out of range: the model has {} layers (0..{})",
                                   layer, ins.config.n_layers, ins.config.n_layers - 1));
  const std::string prefix = layer_prefix(layer);
  std::vector<std::string> choices;
  for (const auto& [name, value] : ins.snapshots)
    if (starts_with(name, prefix)) choices.push_back(name.substr(prefix.size()));
  for (const auto& [name, value] : ins.snapshots)
    if (!starts_with(name, "layers.")) choices.push_back(name);
  choices.push_back("logits");
  choices.push_back("probs");
  return choices;
}

std::string full_snapshot_name(const Inspection& ins, std::size_t layer, const std::string& name) {
  const std::vector<std::string> choices = snapshot_choices(ins, layer);
  if (std::find(choices.begin(), choices.end(), name) == choices.end())
    throw InspectError("unknown snapshot '" + name + "'; valid names: " + join(choices, ", "));
  const std::string in_layer = layer_prefix(layer) + name;
  return ins.has(in_layer) ? in_layer : name;  // a layer snapshot, else a model-wide one
}

HeadView head_view(const Inspection& ins, std::size_t layer, std::size_t head,
                   const std::string& name) {
  const ModelConfig& config = ins.config;
  if (head >= config.n_heads)
    throw InspectError(fmt::format("head {} is out of range: the model has {} query heads (0..{})",
                                   head, config.n_heads, config.n_heads - 1));
  const std::string full = full_snapshot_name(ins, layer, name);
  const Array& a = ins.get(full);
  const SnapshotInfo* info = snapshot_info(name);

  HeadView view;
  view.rows = info ? info->rows : "row";
  view.cols = info ? info->cols : "column";
  view.rows_are_positions = info ? info->rows_are_positions : false;
  view.cols_are_positions = info ? info->cols_are_positions : false;
  view.cols_are_vocab = info ? info->cols_are_vocab : false;
  const HeadAxis axis = info ? info->head_axis : HeadAxis::none;
  const std::size_t group = config.n_heads / config.n_kv_heads;  // query heads per KV head

  if (axis != HeadAxis::none && a.dimension() == 3) {
    std::size_t index = head;
    if (axis == HeadAxis::kv) {
      index = head / group;
      view.kv_head = index;
      view.note =
          fmt::format("GQA: {} query heads share each KV head; query head {} uses KV head {} of {}",
                      group, head, index, config.n_kv_heads);
    }
    if (index >= a.shape(0))
      throw InspectError(fmt::format("snapshot {} has only {} heads", full, a.shape(0)));
    view.values = block_of(a, index);
    view.per_head = true;
  } else {
    view.values = a;
  }
  if (name == "attn.scores")
    view.note =
        "scores are taken before the causal mask: entries with j > i are replaced by -inf "
        "next, so they get weight 0 in attn.softmax";
  return view;
}

Summary summarize(const Array& values) {
  Summary s;
  if (values.size() == 0) return s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  double total = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    double v = values.data()[i];
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    total += v;
  }
  s.mean = total / static_cast<double>(values.size());
  return s;
}

std::vector<TopToken> top_k(const Inspection& ins, std::size_t position, std::size_t k) {
  if (position >= ins.n())
    throw InspectError(
        fmt::format("position {} is out of range: the prompt has {} positions", position, ins.n()));
  const std::size_t vocab = ins.probs.shape(1);
  const Scalar* row = ins.probs.data() + position * vocab;
  std::vector<std::int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  k = std::min(k, vocab);
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [row](std::int32_t a, std::int32_t b) {
                      return row[a] > row[b] || (row[a] == row[b] && a < b);
                    });
  std::vector<TopToken> out;
  for (std::size_t r = 0; r < k; ++r)
    out.push_back({ids[r], ins.vocab.at(static_cast<std::size_t>(ids[r])),
                   ins.vocab_texts.at(static_cast<std::size_t>(ids[r])),
                   static_cast<double>(row[ids[r]])});
  return out;
}

}  // namespace glass
