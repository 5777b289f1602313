// The chat keys of a GGUF file. See export/gguf_chat.hpp.

#include "export/gguf_chat.hpp"

namespace glass {

std::string chatml_jinja() {
  // "\\n" is Jinja's escape inside a string literal: the template holds a backslash and an n.
  return "{% for message in messages %}"
         "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
         "'\\n' }}"
         "{% endfor %}"
         "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
}

std::optional<GgufChatKeys> gguf_chat_keys(const TextTokenizer& tokenizer) {
  const std::optional<std::int32_t> end = tokenizer.special_id(SpecialToken::kImEnd);
  if (!tokenizer.has_chat_tokens() || !end) return std::nullopt;
  return GgufChatKeys{static_cast<std::uint32_t>(*end), chatml_jinja()};
}

}  // namespace glass
