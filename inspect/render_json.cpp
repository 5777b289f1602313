// The inspector's JSON view: the whole inspection as the text of `glass inspect --json`.
// See render_json.hpp.

#include "inspect/render_json.hpp"

#include <cmath>

#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "data/text.hpp"

namespace glass {

namespace {

using ordered_json = nlohmann::ordered_json;

/// Nested lists of an array (non-finite values become null), e.g. (2, 3) -> [[a,b,c],[d,e,f]].
ordered_json nested(const Scalar* data, const std::vector<std::size_t>& shape, std::size_t axis,
                    std::size_t& offset) {
  if (axis == shape.size()) {
    const double v = data[offset++];
    return std::isfinite(v) ? ordered_json(v) : ordered_json(nullptr);
  }
  ordered_json list = ordered_json::array();
  for (std::size_t i = 0; i < shape[axis]; ++i)
    list.push_back(nested(data, shape, axis + 1, offset));
  return list;
}

ordered_json array_json(const Array& a) {
  ordered_json out;
  const Shape shape = shape_of(a);
  out["shape"] = shape;
  std::size_t offset = 0;
  out["values"] = nested(a.data(), shape, 0, offset);
  return out;
}

ordered_json config_json(const ModelConfig& c) {
  ordered_json j;
  j["vocab_size"] = c.vocab_size;
  j["d_model"] = c.d_model;
  j["n_layers"] = c.n_layers;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim();
  j["ffn_hidden"] = c.ffn_hidden;
  j["context_length"] = c.context_length;
  j["rope_base"] = c.rope_base;
  j["norm_eps"] = c.norm_eps;
  return j;
}

}  // namespace

std::string inspection_json(const Inspection& ins, int indent) {
  ordered_json j;
  j["format"] = "glass-inspect";
  j["version"] = 1;
  j["prompt"] = u32_to_utf8(ins.prompt);
  j["tokenizer"] = ins.tokenizer->kind_name();
  j["tokens"] = ins.tokens;
  j["token_texts"] = ins.token_texts;  // one per token: "▁de", "<0x0A>"; a character model's char
  std::vector<std::string> chars;
  for (char32_t c : ins.prompt) chars.push_back(char_to_utf8(c));
  j["chars"] = chars;
  j["vocab"] = ins.vocab_texts;
  j["config"] = config_json(ins.config);
  j["logits"] = array_json(ins.logits);
  j["probs"] = array_json(ins.probs);
  ordered_json snaps = ordered_json::object();
  for (const auto& [name, value] : ins.snapshots) snaps[name] = array_json(value);
  j["snapshots"] = snaps;
  return j.dump(indent);
}

void write_json(const Inspection& ins, const std::string& path) {
  write_file_atomic(path, inspection_json(ins, -1) + "\n");
}

}  // namespace glass
