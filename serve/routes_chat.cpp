// The chat of `glass serve`: POST /api/chat answers the last user message of a conversation with
// a checkpoint fine-tuned on conversations, through the code `glass chat` uses (the ChatML
// template of data/chat_template.hpp, generate_answer of sample/chat.hpp). See server.hpp.
//
// The answer streams as newline-delimited JSON (application/x-ndjson): one {"text": PIECE} line
// per piece of text as the tokens are chosen (a BPE model's byte tokens wait until they make a
// whole character), then one line closing it:
//
//   {"done": true, "text": ANSWER, "end": "end_of_turn" | "token_cap" | "window_full",
//    "end_of_turn": BOOL, "tokens": N, "prompt_tokens": P, "window": W, "tokens_left": L,
//    "context_full": BOOL}
//
// where N counts the answer's tokens (<|im_end|> included when it came), P the rendered prompt's,
// L what is left of the window after both. An error after the first line (the status is sent by
// then) is a last line {"error": MESSAGE}. Everything a client can fix is refused before that,
// with 400 and {"error": MESSAGE}.

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "data/chat_data.hpp"
#include "data/chat_template.hpp"
#include "data/text.hpp"
#include "data/visible_text.hpp"
#include "sample/chat.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

using namespace serve_api;

namespace {

/// The media type of the streamed answer: one JSON object per line.
constexpr const char* kNdjson = "application/x-ndjson; charset=utf-8";

/// The role named `name` in messages[i]. Throws BadRequest for any other.
ChatRole role_of(const json& name, std::size_t i) {
  for (ChatRole r : {ChatRole::kSystem, ChatRole::kUser, ChatRole::kAssistant})
    if (name.is_string() && name.get<std::string>() == chat_role_name(r)) return r;
  throw BadRequest(
      fmt::format("messages[{}].role must be \"system\", \"user\" or \"assistant\" (got {})", i,
                  name.dump(-1, ' ', false, json::error_handler_t::replace)));
}

/// messages[i]: an object with a "role" and a non-empty string "content", nothing else.
ChatMessage message_of(const json& m, std::size_t i) {
  if (!m.is_object() || !m.contains("role") || !m.contains("content"))
    throw BadRequest(
        fmt::format("messages[{}] must be an object {{\"role\": ..., \"content\": \"TEXT\"}}", i));
  for (const auto& [key, value] : m.items())
    if (key != "role" && key != "content")
      throw BadRequest(fmt::format(
          "messages[{}] has an unknown key '{}'; a message has \"role\" and \"content\"", i, key));
  const ChatRole role = role_of(m["role"], i);
  if (!m["content"].is_string() || m["content"].get<std::string>().empty())
    throw BadRequest(fmt::format("messages[{}].content must be a non-empty string", i));
  return {role, m["content"].get<std::string>()};
}

/// The body's "messages": the conversation so far, which a user message must end (the one the
/// answer is for). Throws BadRequest naming the message at fault.
std::vector<ChatMessage> chat_messages(const json& body) {
  if (!body.contains("messages") || !body["messages"].is_array() || body["messages"].empty())
    throw BadRequest(
        "give the conversation: {\"messages\": [{\"role\": \"user\", \"content\": \"TEXT\"}]}");
  std::vector<ChatMessage> messages;
  for (std::size_t i = 0; i < body["messages"].size(); ++i)
    messages.push_back(message_of(body["messages"][i], i));
  std::string field;
  const std::string problem = chat_turn_problem(messages, /*may_end_with_user=*/true, &field);
  if (!problem.empty()) throw BadRequest(field + ": " + problem);
  if (messages.back().role != ChatRole::kUser)
    throw BadRequest(
        "the last message must be the user's: the answer is the assistant's turn after it");
  return messages;
}

/// The ids the answer continues: `messages` rendered by the chat template, ending with
/// <|im_start|>assistant\n. Throws BadRequest for a base model's tokenizer (no chat tokens), a
/// character the model does not know, or a prompt that leaves no room for an answer.
std::vector<std::int32_t> chat_prompt(const Checkpoint& m,
                                      const std::vector<ChatMessage>& messages) {
  try {
    chat_token_ids(m);
    return render_chat_prompt(m.tokenizer(), messages, m.window());
  } catch (const NoChatTokensError& e) {
    throw BadRequest(std::string("the model served cannot chat: ") + e.what() +
                     "; fine-tune it on conversations (glass finetune) and serve the fine-tuned "
                     "checkpoint");
  } catch (const ChatTooLongError& e) {
    throw BadRequest(fmt::format(
        "the conversation is too long: its prompt is {} {} and the model's window holds {}, "
        "with at least one {} of answer; send fewer or shorter messages",
        e.length(), m.unit(), e.context_length(), m.unit(false)));
  } catch (const UnknownCharacterError& e) {
    throw BadRequest(std::string("the conversation has a character the model does not know: ") +
                     e.what());
  }
}

const char* end_name(AnswerEnd end) {
  switch (end) {
    case AnswerEnd::kEndOfTurn:
      return "end_of_turn";
    case AnswerEnd::kWindowFull:
      return "window_full";
    case AnswerEnd::kStopped:
      return "stopped";
    case AnswerEnd::kTokenCap:
    default:
      return "token_cap";
  }
}

/// `j` as one line of the stream; false when the client has gone.
bool write_line(httplib::DataSink& sink, const json& j) {
  const std::string line = j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  return sink.write(line.data(), line.size());
}

/// The stream's last line for answer `a` (sent as `shown`) to a prompt of `prompt_tokens` ids,
/// `used` ids of the `window` taken by prompt and answer.
json closing_line(const ChatAnswer& a, const std::string& shown, std::size_t prompt_tokens,
                  std::size_t used, std::size_t window) {
  return json{{"done", true},
              {"text", shown},
              {"end", end_name(a.end)},
              {"end_of_turn", a.end == AnswerEnd::kEndOfTurn},
              {"tokens", a.ids.size()},
              {"prompt_tokens", prompt_tokens},
              {"window", window},
              {"tokens_left", used < window ? window - used : 0},
              {"context_full", a.end == AnswerEnd::kWindowFull}};
}

}  // namespace

void Server::answer_chat(const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req, {"messages", "temperature", "top_k", "top_p", "min_p",
                                     "repeat_penalty", "repeat_last_n", "seed", "n", "raw"});
  const std::vector<ChatMessage> messages = chat_messages(body);
  const bool raw = bool_field(body, "raw", false);  // control characters as they are
  const auto m = model();
  ChatOptions options;
  options.sampling = sampling_fields(body, m->config().vocab_size);
  options.sampling.use_kv_cache = true;  // as a chat session reads
  options.seed = integer_field(body, "seed", 1337, 0, UINT64_MAX);
  options.max_tokens =
      static_cast<std::size_t>(integer_field(body, "n", 200, 1, options_.max_sample_tokens));
  const std::vector<std::int32_t> prompt = chat_prompt(*m, messages);
  res.set_chunked_content_provider(
      kNdjson, [this, m, prompt, options, raw](std::size_t, httplib::DataSink& sink) {
        std::lock_guard lock(compute_mutex_);
        const std::size_t window = m->window();
        std::vector<std::int32_t> text = prompt;
        std::string shown;  // the answer as sent
        try {
          NextTokenLogits next(m->model(), window, options.sampling);
          std::mt19937_64 rng(options.seed);
          const ChatAnswer a = generate_answer(
              next, text, window, m->tokenizer(), options, rng, [&](const std::string& piece) {
                const std::string out = raw ? piece : escape_controls(piece);
                shown += out;
                if (stopping_ || !write_line(sink, json{{"text", out}})) throw ClientGone{};
              });
          if (!write_line(sink, closing_line(a, shown, prompt.size(), text.size(), window)))
            return false;
        } catch (const ClientGone&) {
          return false;
        } catch (const std::exception& e) {  // after the first line the status is sent
          write_line(sink, json{{"error", e.what()}});
        }
        sink.done();
        return true;
      });
}

}  // namespace glass
