// A base model made ready for chat fine-tuning. See train/chat_base.hpp.

#include "train/chat_base.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <fmt/format.h>

#include "data/text.hpp"

namespace glass {

TextTokenizer chat_tokenizer(const TextTokenizer& base,
                             const std::vector<Conversation>& conversations,
                             std::vector<char32_t>* added) {
  const Tokenizer* chars = base.chars();
  std::set<char32_t> missing;  // code point order
  if (chars != nullptr) {
    auto scan = [&](const std::u32string& text) {
      for (char32_t c : text)
        if (!chars->contains(c)) missing.insert(c);
    };
    for (ChatRole role : {ChatRole::kSystem, ChatRole::kUser, ChatRole::kAssistant})
      scan(utf8_to_u32(std::string(chat_role_name(role)) + "\n"));
    for (const Conversation& conversation : conversations)
      for (const ChatMessage& message : conversation.messages) scan(utf8_to_u32(message.content));
  }
  if (added != nullptr) added->assign(missing.begin(), missing.end());
  if (missing.empty()) return base.with_chat_tokens();
  std::vector<char32_t> grown = chars->chars();
  grown.insert(grown.end(), missing.begin(), missing.end());
  // The specials (chat tokens, when the base has them) follow the characters, as always.
  return TextTokenizer(Tokenizer(std::move(grown), chars->specials())).with_chat_tokens();
}

namespace {

/// For each id of `from`, its id in `to` (the token of the same text; id 0 of a character
/// model's unknown token stays 0).
std::vector<std::size_t> id_map(const TextTokenizer& from, const TextTokenizer& to) {
  std::unordered_map<std::string, std::size_t> to_ids;
  for (std::size_t id = 0; id < to.vocab_size(); ++id)
    if (to.has_text(static_cast<std::int32_t>(id)))
      to_ids.emplace(to.token_text(static_cast<std::int32_t>(id)), id);
  std::vector<std::size_t> map(from.vocab_size());
  for (std::size_t id = 0; id < from.vocab_size(); ++id) {
    const auto i = static_cast<std::int32_t>(id);
    if (!from.has_text(i)) {
      if (to.has_text(i))
        throw std::invalid_argument(
            "grow_vocabulary: the unknown id 0 is not unknown in the new one");
      map[id] = id;
      continue;
    }
    const auto found = to_ids.find(from.token_text(i));
    if (found == to_ids.end())
      throw std::invalid_argument(
          fmt::format("grow_vocabulary: the new vocabulary lacks the token \"{}\" (id {})",
                      from.token_text(i), id));
    map[id] = found->second;
  }
  return map;
}

}  // namespace

std::unique_ptr<Decoder> grow_vocabulary(const Decoder& model, const TextTokenizer& from,
                                         const TextTokenizer& to, std::uint64_t seed) {
  const ModelConfig& old_config = model.config();
  if (from.vocab_size() != old_config.vocab_size)
    throw std::invalid_argument(
        fmt::format("grow_vocabulary: the tokenizer has {} ids, the model {} embedding rows",
                    from.vocab_size(), old_config.vocab_size));
  const std::vector<std::size_t> map = id_map(from, to);
  ModelConfig config = old_config;
  config.vocab_size = to.vocab_size();
  config.vocab_cap = std::max(config.vocab_cap, config.vocab_size);
  auto grown = std::make_unique<Decoder>(config, seed);  // the new rows' initial values
  const auto old_params = model.named_parameters();
  auto new_params = grown->named_parameters();
  for (std::size_t p = 0; p < old_params.size(); ++p) {
    const auto& [name, old_tensor] = old_params[p];
    Tensor target = new_params[p].second;
    const Scalar* src = old_tensor.value().data();
    Scalar* dst = target.value().data();
    if (name != "tok_embeddings.weight" && name != "output.weight") {
      std::copy(src, src + old_tensor.size(), dst);
      continue;
    }
    const std::size_t d = config.d_model;  // rows of (vocab_size, d_model)
    for (std::size_t id = 0; id < map.size(); ++id)
      std::copy(src + id * d, src + (id + 1) * d, dst + map[id] * d);
  }
  return grown;
}

}  // namespace glass
