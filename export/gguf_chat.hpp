#pragma once
// What a GGUF file says about a chat model: one whose tokenizer has ChatML's <|im_start|> and
// <|im_end|> (TextTokenizer::with_chat_tokens, written by data/chat_template.hpp's template).
//
//   tokenizer.chat_template        ChatML as a Jinja template (chatml_jinja()), which renders a
//                                  conversation as glass's chat does; llama.cpp recognises it as
//                                  its built-in "chatml" (it holds "<|im_start|>")
//   tokenizer.ggml.eos_token_id    <|im_end|>'s id: the end-of-turn token fine-tuning taught the
//   tokenizer.ggml.eot_token_id    model to write, so llama.cpp ends an answer there (its
//                                  end-of-generation set holds the eos and eot ids), never at the
//                                  "</s>" a glass model was never trained to write
// The two markers are CONTROL tokens of the vocabulary (export_gguf.hpp): llama.cpp's tokenizer
// reads a marker's text as its one id only where special tokens are parsed (a rendered template),
// never in plain text, as glass never encodes them from text; detokenizing, it writes them only
// when asked for special tokens.

#include <cstdint>
#include <optional>
#include <string>

#include "data/text_tokenizer.hpp"

namespace glass {

/// ChatML as a Jinja template (Hugging Face's `chat_template` language, which llama.cpp and
/// node-llama-cpp render): each message as <|im_start|>{role}\n{content}<|im_end|>\n, in order
/// (a system message only when the conversation has one: there is no default), then, with
/// add_generation_prompt, <|im_start|>assistant\n — the text of render_chat_prompt's ids.
std::string chatml_jinja();

/// The chat keys of a GGUF file (see the file comment).
struct GgufChatKeys {
  std::uint32_t end_of_turn_id = 0;  ///< <|im_end|>'s id: eos and eot
  std::string chat_template;         ///< chatml_jinja()
};

/// The chat keys for a tokenizer with chat tokens, none for one without (a base model keeps
/// "</s>" as its eos id and has no template).
std::optional<GgufChatKeys> gguf_chat_keys(const TextTokenizer& tokenizer);

}  // namespace glass
