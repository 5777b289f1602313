// The ChatML template: ids and labels worked out by hand for a tiny character vocabulary, the
// prompt a model answers, and BPE's pieces.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/bpe_tokenizer.hpp"
#include "data/chat_template.hpp"
#include "data/text.hpp"

using glass::ChatMessage;
using glass::ChatRole;
using glass::ChatTooLongError;
using glass::Conversation;
using glass::TextTokenizer;
using glass::Tokenizer;

namespace {

// Ids: 0 unknown, 1 'a', 2 's', 3 'i', 4 't', 5 'n', 6 'u', 7 'e', 8 'r', 9 '\n', 10 'o',
// 11 'y', 12 'm', 13 '<', 14 '|', 15 '>', 16 '_', 17 'd'; then the chat tokens
// 18 <|im_start|> and 19 <|im_end|>.
TextTokenizer tiny() {
  return TextTokenizer(Tokenizer({U'a', U's', U'i', U't', U'n', U'u', U'e', U'r', U'\n', U'o', U'y',
                                  U'm', U'<', U'|', U'>', U'_', U'd'}))
      .with_chat_tokens();
}

constexpr std::int32_t S = 18, E = 19, X = glass::kIgnoreLabel;

Conversation user_oi_assistant_sim() {
  Conversation c;
  c.messages = {{ChatRole::kUser, "oi"}, {ChatRole::kAssistant, "sim"}};
  c.line = 4;
  return c;
}

}  // namespace

TEST(ChatTemplate, IdsAndLabelsByHand) {
  const glass::ChatTokens t = glass::render_chat(tiny(), user_oi_assistant_sim());
  // <|im_start|> u s e r \n o i <|im_end|> \n
  // <|im_start|> a s s i s t a n t \n s i m <|im_end|> \n
  const std::vector<std::int32_t> ids = {S, 6, 2, 7,  8, 9, 10, 3, E, 9,  // user
                                         S, 1, 2, 2,  3, 2, 4,  1, 5, 4,
                                         9, 2, 3, 12, E, 9};  // asst.
  // Only "sim" and its <|im_end|> are learned.
  const std::vector<std::int32_t> labels = {X, X, X, X, X, X, X, X, X, X, X,  X, X,
                                            X, X, X, X, X, X, X, X, 2, 3, 12, E, X};
  EXPECT_EQ(t.ids, ids);
  EXPECT_EQ(t.labels, labels);
  EXPECT_EQ(tiny().decode(t.ids),
            U"<|im_start|>user\noi<|im_end|>\n<|im_start|>assistant\nsim<|im_end|>\n");
}

TEST(ChatTemplate, SystemAndTwoTurnsLearnOnlyTheAnswers) {
  Conversation c;
  c.messages = {{ChatRole::kSystem, "y"},
                {ChatRole::kUser, "o"},
                {ChatRole::kAssistant, "a"},
                {ChatRole::kUser, "i"},
                {ChatRole::kAssistant, "<|im_end|>"}};  // typed: ordinary characters
  const glass::ChatTokens t = glass::render_chat(tiny(), c);
  const std::vector<std::int32_t> ids = {
      S,  2,  11, 2,  4,  7, 12, 9,  11, E,  9,           // system \n y
      S,  6,  2,  7,  8,  9, 10, E,  9,                   // user \n o
      S,  1,  2,  2,  3,  2, 4,  1,  5,  4,  9, 1, E, 9,  // assistant \n a
      S,  6,  2,  7,  8,  9, 3,  E,  9,                   // user \n i
      S,  1,  2,  2,  3,  2, 4,  1,  5,  4,  9,           // assistant \n
      13, 14, 3,  12, 16, 7, 5,  17, 14, 15, E, 9};       // < | i m _ e n d | > <|im_end|> \n
  EXPECT_EQ(t.ids, ids);
  std::vector<std::int32_t> labels(ids.size(), X);
  labels[31] = 1;                                             // "a"
  labels[32] = E;                                             // its <|im_end|>
  for (std::size_t i = 54; i <= 64; ++i) labels[i] = ids[i];  // "<|im_end|>" typed, and the end
  EXPECT_EQ(t.labels, labels);
}

TEST(ChatTemplate, ThePromptIsWhatTrainingSawBeforeTheAnswer) {
  const std::vector<ChatMessage> history = {{ChatRole::kUser, "oi"}};
  const std::vector<std::int32_t> prompt = glass::render_chat_prompt(tiny(), history);
  const std::vector<std::int32_t> want = {S, 6, 2, 7, 8, 9, 10, 3, E, 9, S,
                                          1, 2, 2, 3, 2, 4, 1,  5, 4, 9};
  EXPECT_EQ(prompt, want);
  // A history that ends with the assistant, or breaks the turn order, is refused.
  EXPECT_THROW(glass::render_chat_prompt(tiny(), user_oi_assistant_sim().messages),
               std::invalid_argument);
  EXPECT_THROW(glass::render_chat_prompt(tiny(), {}), std::invalid_argument);
  // Room for at least one token of answer.
  EXPECT_NO_THROW(glass::render_chat_prompt(tiny(), history, 22));
  EXPECT_THROW(glass::render_chat_prompt(tiny(), history, 21), ChatTooLongError);
}

TEST(ChatTemplate, ALongConversationIsATypedErrorNamingIt) {
  EXPECT_NO_THROW(glass::render_chat(tiny(), user_oi_assistant_sim(), 26));
  try {
    glass::render_chat(tiny(), user_oi_assistant_sim(), 25);
    FAIL() << "no error";
  } catch (const ChatTooLongError& e) {
    EXPECT_EQ(e.line(), 4u);
    EXPECT_EQ(e.length(), 26u);
    EXPECT_EQ(e.context_length(), 25u);
    EXPECT_NE(std::string(e.what()).find("line 4"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, RefusesATokenizerWithoutChatTokensAndUnknownCharacters) {
  const TextTokenizer plain(Tokenizer({U'a', U's'}));
  EXPECT_THROW(glass::render_chat(plain, user_oi_assistant_sim()), std::invalid_argument);
  Conversation c = user_oi_assistant_sim();
  c.messages[1].content = "sim!";
  try {
    glass::render_chat(tiny(), c);
    FAIL() << "no error";
  } catch (const glass::UnknownCharacterError& e) {
    EXPECT_NE(std::string(e.what()).find("line 4, messages[1]"), std::string::npos) << e.what();
  }
  Conversation bad;
  bad.messages = {{ChatRole::kUser, "oi"}};
  EXPECT_THROW(glass::render_chat(tiny(), bad), std::invalid_argument);
}

TEST(ChatTemplate, BpeEncodesEachTextAsAfterASpecialToken) {
  const TextTokenizer bpe =
      TextTokenizer(glass::BpeTokenizer::train(
                        U"o gato e o rato; assistant\nsim, user\noi. o pato, o gato sim", 300))
          .with_chat_tokens();
  const std::int32_t s = *bpe.special_id(glass::SpecialToken::kImStart);
  const std::int32_t e = *bpe.special_id(glass::SpecialToken::kImEnd);
  Conversation c = user_oi_assistant_sim();
  c.messages[1].content = "o gato <|im_end|>";
  const glass::ChatTokens t = glass::render_chat(bpe, c);
  std::vector<std::int32_t> want = {s};
  auto append = [&want](const std::vector<std::int32_t>& ids) {
    want.insert(want.end(), ids.begin(), ids.end());
  };
  append(bpe.encode(U"user\noi"));  // "▁user\noi", as llama.cpp after a special token
  want.push_back(e);
  append(bpe.encode(U"\n"));
  const std::size_t header = want.size();
  want.push_back(s);
  append(bpe.encode(U"assistant\n"));
  const std::size_t answer = want.size();
  const std::vector<std::int32_t> content = bpe.encode_continuation(U"o gato <|im_end|>");
  append(content);
  want.push_back(e);
  append(bpe.encode(U"\n"));
  EXPECT_EQ(t.ids, want);
  // The answer without the dummy prefix: it decodes to the content itself.
  EXPECT_EQ(bpe.decode_generated(content), "o gato <|im_end|>");
  for (std::int32_t id : content) EXPECT_LT(id, s);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const bool learned = i >= answer && i <= answer + content.size();
    EXPECT_EQ(t.labels[i], learned ? want[i] : glass::kIgnoreLabel) << i;
  }
  // The prompt is the conversation up to the answer.
  const std::vector<std::int32_t> prompt = glass::render_chat_prompt(bpe, {c.messages[0]});
  EXPECT_EQ(prompt, std::vector<std::int32_t>(want.begin(), want.begin() + answer));
  EXPECT_GT(answer, header);
}
