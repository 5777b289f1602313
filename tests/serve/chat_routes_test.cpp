// POST /api/chat of `glass serve` (serve/routes_chat.cpp) through a real HTTP client: its answers
// checked against the chat code `glass chat` runs (ChatSession, generate_answer on the chat
// template's prompt), how an answer ended, every kind of bad request (each a 4xx with a message,
// the server answering well after them), the Host/Origin/Content-Type guards, and a base model
// refused.

#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "data/chat_template.hpp"
#include "fixtures.hpp"
#include "sample/chat.hpp"
#include "sample/chat_fixtures.hpp"
#include "serve/server.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::size_t kWindow = 128;

/// A streamed chat answer read back: the text of its {"text"} lines and its last line.
struct StreamedAnswer {
  int status = 0;
  std::string pieces;  ///< the {"text"} lines' text, in order
  json last;           ///< the closing line (or {"error": ...} for a refusal)
  std::string content_type;
};

/// A server on `checkpoint` (port 0) and a client with timeouts, so that no test can hang.
struct Served {
  std::unique_ptr<glass::Server> server;
  std::unique_ptr<httplib::Client> client;

  explicit Served(const std::string& checkpoint) {
    glass::ServeOptions options;
    options.checkpoint = checkpoint;
    options.port = 0;
    options.max_sample_tokens = 300;
    server = std::make_unique<glass::Server>(options);
    const int port = server->start();
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_connection_timeout(5, 0);
    client->set_read_timeout(60, 0);
    client->set_write_timeout(5, 0);
  }

  StreamedAnswer chat(const std::string& body, const httplib::Headers& headers = {},
                      const char* type = "application/json") {
    StreamedAnswer a;
    const auto r = client->Post("/api/chat", headers, body, type);
    EXPECT_TRUE(r) << httplib::to_string(r.error());
    if (!r) return a;
    a.status = r->status;
    a.content_type = r->get_header_value("Content-Type");
    if (a.status != 200) {
      a.last = json::parse(r->body, nullptr, false);
      return a;
    }
    std::size_t at = 0;
    while (at < r->body.size()) {  // one JSON object per line
      const std::size_t end = r->body.find('\n', at);
      EXPECT_NE(end, std::string::npos) << "every line ends with a newline: " << r->body;
      if (end == std::string::npos) break;
      const json line = json::parse(r->body.substr(at, end - at));
      if (line.contains("text") && !line.contains("done"))
        a.pieces += line["text"].get<std::string>();
      else
        a.last = line;
      at = end + 1;
    }
    return a;
  }
};

json user(const std::string& text) { return {{"role", "user"}, {"content", text}}; }
json assistant(const std::string& text) { return {{"role", "assistant"}, {"content", text}}; }

class ChatRoute : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("serve_chat");
    glass_test::write_chat_checkpoint((dir_ / "chat").string(), kWindow, 7);
    glass_test::write_small_checkpoint((dir_ / "base").string(), 16, 3);
    checkpoint_ = std::make_unique<glass::Checkpoint>(glass::load_checkpoint(chat_dir()));
  }
  static void TearDownTestSuite() { checkpoint_.reset(); }
  static std::string chat_dir() { return (dir_ / "chat").string(); }

  void SetUp() override { served_ = std::make_unique<Served>(chat_dir()); }
  void TearDown() override { served_.reset(); }

  /// The chat code's answer to `messages` (the chat template's prompt, generate_answer).
  static glass::ChatAnswer library_answer(const std::vector<glass::ChatMessage>& messages,
                                          const glass::ChatOptions& options,
                                          std::vector<std::int32_t>* text = nullptr) {
    const glass::Checkpoint& c = *checkpoint_;
    std::vector<std::int32_t> ids = glass::render_chat_prompt(c.tokenizer(), messages);
    glass::NextTokenLogits next(c.model(), c.window(), options.sampling);
    std::mt19937_64 rng(options.seed);
    glass::ChatAnswer a =
        glass::generate_answer(next, ids, c.window(), c.tokenizer(), options, rng);
    if (text != nullptr) *text = ids;
    return a;
  }

  /// Expects a refusal with `status` whose {"error"} contains `words`.
  void expect_refused(const StreamedAnswer& a, int status, const std::string& words) {
    EXPECT_EQ(a.status, status) << a.last.dump();
    ASSERT_TRUE(a.last.is_object() && a.last.contains("error")) << a.last.dump();
    EXPECT_NE(a.last["error"].get<std::string>().find(words), std::string::npos) << a.last["error"];
  }

  static fs::path dir_;
  static std::unique_ptr<glass::Checkpoint> checkpoint_;
  std::unique_ptr<Served> served_;
};

fs::path ChatRoute::dir_;
std::unique_ptr<glass::Checkpoint> ChatRoute::checkpoint_;

}  // namespace

TEST_F(ChatRoute, AGreedyAnswerIsTheChatSessionsAnswer) {
  const json body = {{"messages", {{{"role", "system"}, {"content", "responda"}}, user("oi?")}},
                     {"temperature", 0},
                     {"n", 40}};
  const StreamedAnswer a = served_->chat(body.dump());
  ASSERT_EQ(a.status, 200) << a.last.dump();
  EXPECT_NE(a.content_type.find("application/x-ndjson"), std::string::npos);
  // `glass chat --system responda -p 'oi?' --temp 0 -n 40`: the same answer, token for token.
  glass::ChatOptions options;
  options.sampling.temperature = 0;
  options.max_tokens = 40;
  glass::ChatSession session(*checkpoint_, options, "responda");
  const glass::ChatAnswer expected = session.answer("oi?");
  EXPECT_EQ(a.pieces, expected.text);
  EXPECT_EQ(a.last["text"], expected.text);
  EXPECT_EQ(a.last["tokens"], expected.ids.size());
  EXPECT_EQ(a.last["end_of_turn"], expected.end == glass::AnswerEnd::kEndOfTurn);
  const std::size_t prompt =
      glass::render_chat_prompt(checkpoint_->tokenizer(), {{glass::ChatRole::kSystem, "responda"},
                                                           {glass::ChatRole::kUser, "oi?"}})
          .size();
  EXPECT_EQ(a.last["prompt_tokens"], prompt);
  EXPECT_EQ(a.last["window"], kWindow);
  EXPECT_EQ(a.last["tokens_left"], kWindow - prompt - expected.ids.size());
}

TEST_F(ChatRoute, ALaterTurnAnswersTheWholeConversationAsTheChatCodeDoes) {
  const json body = {{"messages", {user("abc"), assistant("cba"), user("xyz")}},
                     {"temperature", 0.9},
                     {"top_k", 10},
                     {"top_p", 0.95},
                     {"seed", 5},
                     {"n", 30}};
  const StreamedAnswer a = served_->chat(body.dump());
  ASSERT_EQ(a.status, 200) << a.last.dump();
  glass::ChatOptions options;
  options.sampling.temperature = 0.9;
  options.sampling.top_k = 10;
  options.sampling.top_p = 0.95;
  options.sampling.use_kv_cache = true;
  options.seed = 5;
  options.max_tokens = 30;
  const glass::ChatAnswer expected = library_answer({{glass::ChatRole::kUser, "abc"},
                                                     {glass::ChatRole::kAssistant, "cba"},
                                                     {glass::ChatRole::kUser, "xyz"}},
                                                    options);
  EXPECT_EQ(a.last["text"], expected.text);
  EXPECT_EQ(a.pieces, expected.text);
  EXPECT_EQ(a.last["tokens"], expected.ids.size());
  // Another seed, another answer: the seed is read.
  const StreamedAnswer other = served_->chat(
      json{{"messages", body["messages"]}, {"temperature", 0.9}, {"seed", 6}, {"n", 30}}.dump());
  EXPECT_NE(other.last["text"], a.last["text"]);
}

TEST_F(ChatRoute, EachAnswerSaysHowItEndedAsTheChatCodeDoes) {
  glass::ChatOptions options;
  options.sampling.temperature = 1.5;
  options.sampling.use_kv_cache = true;
  options.max_tokens = 12;
  std::set<std::string> ends;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    options.seed = seed;
    const StreamedAnswer a = served_->chat(
        json{{"messages", {user("oi")}}, {"temperature", 1.5}, {"seed", seed}, {"n", 12}}.dump());
    ASSERT_EQ(a.status, 200) << a.last.dump();
    const glass::ChatAnswer expected = library_answer({{glass::ChatRole::kUser, "oi"}}, options);
    EXPECT_EQ(a.last["text"], expected.text) << seed;
    EXPECT_EQ(a.last["tokens"], expected.ids.size()) << seed;
    const bool ended = expected.end == glass::AnswerEnd::kEndOfTurn;
    EXPECT_EQ(a.last["end_of_turn"], ended) << seed;
    EXPECT_EQ(a.last["end"], ended ? "end_of_turn" : "token_cap") << seed;
    EXPECT_EQ(a.last["context_full"], false);
    ends.insert(a.last["end"].get<std::string>());
  }
  // Both ends were seen: the model wrote <|im_end|> in some answers, the cap cut the others.
  EXPECT_EQ(ends, (std::set<std::string>{"end_of_turn", "token_cap"}));
}

TEST_F(ChatRoute, AnAnswerThatFillsTheWindowSaysSo) {
  // A prompt of window - 3 tokens: "<|im_start|>user\n" (6), the content, "<|im_end|>\n" (2),
  // "<|im_start|>assistant\n" (11): at most 3 tokens of answer.
  const std::string content(kWindow - 3 - 19, 'a');
  glass::ChatOptions options;
  options.sampling.temperature = 0;
  options.sampling.use_kv_cache = true;
  options.max_tokens = 50;
  std::vector<std::int32_t> text;
  const glass::ChatAnswer expected =
      library_answer({{glass::ChatRole::kUser, content}}, options, &text);
  ASSERT_EQ(expected.end, glass::AnswerEnd::kWindowFull) << "a fixture that reaches the window";
  const StreamedAnswer a =
      served_->chat(json{{"messages", {user(content)}}, {"temperature", 0}, {"n", 50}}.dump());
  ASSERT_EQ(a.status, 200) << a.last.dump();
  EXPECT_EQ(a.last["prompt_tokens"], kWindow - 3);
  EXPECT_EQ(a.last["tokens"], 3);
  EXPECT_EQ(a.last["end"], "window_full");
  EXPECT_EQ(a.last["context_full"], true);
  EXPECT_EQ(a.last["tokens_left"], 0);
  EXPECT_EQ(a.last["text"], expected.text);
  // One character more leaves room for no answer at all: refused, with both lengths.
  expect_refused(
      served_->chat(json{{"messages", {user(content + "aaa")}}, {"temperature", 0}}.dump()), 400,
      "the conversation is too long: its prompt is 128 characters and the model's window holds "
      "128");
}

TEST_F(ChatRoute, BadRequestsAreRefusedWithAMessageAndTheServerGoesOn) {
  auto refused = [&](const json& messages, const std::string& words) {
    SCOPED_TRACE(messages.dump());
    expect_refused(served_->chat(json{{"messages", messages}}.dump()), 400, words);
  };
  refused({{{"role", "bot"}, {"content", "oi"}}},
          "messages[0].role must be \"system\", \"user\" or \"assistant\" (got \"bot\")");
  refused({{{"role", 3}, {"content", "oi"}}}, "messages[0].role must be");
  refused({user("oi"), assistant("ola")}, "the last message must be the user's");
  refused(json::array({user("")}), "messages[0].content must be a non-empty string");
  refused({{{"role", "user"}, {"content", 5}}}, "messages[0].content must be a non-empty string");
  refused(json::array({json{{"role", "user"}}}), "messages[0] must be an object");
  refused({"oi"}, "messages[0] must be an object");
  refused({{{"role", "user"}, {"content", "oi"}, {"name", "x"}}}, "unknown key 'name'");
  refused({user("oi"), {{"role", "system"}, {"content", "s"}}, user("ola")},
          "messages[1].role: a system message may only be the first message");
  refused({user("oi"), user("ola")}, "messages[1].role: \"user\" where \"assistant\"");
  refused({{{"role", "system"}, {"content", "s"}}}, "only a system message");
  refused(json::array(), "give the conversation");
  refused("oi", "give the conversation");
  refused(json::array({user("日本")}), "a character the model does not know");
  expect_refused(served_->chat("{}"), 400, "give the conversation");
  expect_refused(served_->chat("{\"messages\": [}"), 400, "not valid JSON");
  expect_refused(served_->chat("[1]"), 400, "must be a JSON object");
  expect_refused(served_->chat("{\"messages\": [{\"role\": \"user\", \"content\": \"a\xff\"}]}"),
                 400, "not valid JSON (UTF-8)");
  const json oi = {user("oi")};
  for (const auto& [field, value, words] : std::vector<std::tuple<std::string, json, std::string>>{
           {"temp", 1, "unknown parameter 'temp'"},
           {"temperature", "NaN", "'temperature' must be a number"},
           {"temperature", -1, "'temperature' must be a number"},
           {"top_p", 0, "'top_p' must be a number in (0"},
           {"top_k", 1000, "'top_k' must be an integer from 0 to 48"},
           {"n", 0, "'n' must be an integer from 1 to 300"},
           {"n", 301, "'n' must be an integer from 1 to 300"},
           {"n", 2.5, "'n' must be an integer"},
           {"seed", -1, "'seed' must be an integer"}})
    expect_refused(served_->chat(json{{"messages", oi}, {field, value}}.dump()), 400, words);
  // A number no double holds: refused, not read as infinity.
  expect_refused(served_->chat(R"({"messages": [{"role": "user", "content": "oi"}],
                                  "temperature": 1e999})"),
                 400, "not valid JSON");
  // A body over the limit: 413 before it is read.
  expect_refused(served_->chat(json{{"messages", {user(std::string(100 * 1024, 'a'))}}}.dump()),
                 413, "too large");
  // Other methods: 405.
  const auto get = served_->client->Get("/api/chat");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  // After all of them the server answers.
  const StreamedAnswer fine = served_->chat(json{{"messages", oi}, {"n", 3}}.dump());
  EXPECT_EQ(fine.status, 200) << fine.last.dump();
  EXPECT_EQ(fine.last["tokens"].get<int>() <= 3, true);
}

TEST_F(ChatRoute, OnlySameOriginJsonPostsAreAnswered) {
  const std::string body = json{{"messages", {user("oi")}}, {"n", 2}}.dump();
  expect_refused(served_->chat(body, {}, "text/plain"), 415, "application/json");
  expect_refused(served_->chat(body, {{"Origin", "http://evil.example"}}), 403, "Origin");
  expect_refused(served_->chat(body, {{"Host", "evil.example"}}), 421, "evil.example");
  EXPECT_EQ(
      served_
          ->chat(body, {{"Origin", "http://127.0.0.1:" + std::to_string(served_->server->port())}})
          .status,
      200);
}

TEST_F(ChatRoute, ABaseModelIsRefusedAndInfoSaysWhichModelsChat) {
  Served base((dir_ / "base").string());
  expect_refused(base.chat(json{{"messages", {user("to be")}}}.dump()), 400,
                 "the model served cannot chat: this checkpoint's tokenizer has no chat tokens");
  expect_refused(base.chat(json{{"messages", {user("to be")}}}.dump()), 400, "glass finetune");
  const auto info = base.client->Get("/api/info");
  ASSERT_TRUE(info);
  EXPECT_EQ(json::parse(info->body)["chat"], false);
  const auto chat_info = served_->client->Get("/api/info");
  ASSERT_TRUE(chat_info);
  EXPECT_EQ(json::parse(chat_info->body)["chat"], true);
}

TEST_F(ChatRoute, ThePageHasTheChatPanel) {
  const auto page = served_->client->Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("id=\"chat-section\""), std::string::npos);
  EXPECT_NE(page->body.find("fetch(\"api/chat\""), std::string::npos);
  EXPECT_NE(page->body.find("chatReset"), std::string::npos);
  EXPECT_EQ(page->body.find("<script src="), std::string::npos) << "no external assets";
}
