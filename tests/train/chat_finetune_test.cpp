// A chat fine-tune's parts (train/chat_base.hpp, train/chat_batches.hpp) and the Trainer running
// one (TrainOptions::chat): the vocabulary grown with every known row kept bit for bit, the rows
// of a batch and their loss mask, and a resume that continues the run exactly.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "autograd/ops.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/bpe_tokenizer.hpp"
#include "data/chat_data.hpp"
#include "data/chat_template.hpp"
#include "fixtures.hpp"
#include "test_paths.hpp"
#include "test_util.hpp"
#include "train/chat_base.hpp"
#include "train/chat_batches.hpp"
#include "train/errors.hpp"
#include "train/train_state.hpp"
#include "train/trainer.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

std::vector<Conversation> conversations() {
  return parse_chat_jsonl(
      R"({"messages":[{"role":"user","content":"to be + 1?"},{"role":"assistant","content":"42"}]})"
      "\n"
      R"({"messages":[{"role":"user","content":"the question"},{"role":"assistant","content":"be"}]})"
      "\n",
      "chat.jsonl");
}

/// Row `id` of a (vocab_size, d_model) parameter.
std::vector<Scalar> row(const Tensor& weight, std::size_t id) {
  const std::size_t d = weight.value().shape()[1];
  return std::vector<Scalar>(weight.value().data() + id * d, weight.value().data() + (id + 1) * d);
}

}  // namespace

TEST(ChatBase, GrowingKeepsEveryKnownRowBitForBitAndDrawsTheNewOnes) {
  const TextTokenizer base(Tokenizer::from_text(glass_test::kSmallText));
  ASSERT_FALSE(base.knows(U'+'));
  std::vector<char32_t> added;
  const TextTokenizer grown = chat_tokenizer(base, conversations(), &added);
  // The characters of the messages and of the role names the base lacks, in code point order.
  EXPECT_EQ(std::u32string(added.begin(), added.end()), U"+124?my");
  EXPECT_TRUE(grown.has_chat_tokens());
  EXPECT_EQ(grown.vocab_size(), base.vocab_size() + added.size() + 2);

  const Decoder model(glass_test::small_config(base.vocab_size()), 5);
  const auto bigger = grow_vocabulary(model, base, grown, 9);
  EXPECT_EQ(bigger->config().vocab_size, grown.vocab_size());
  const auto before = model.named_parameters();
  const auto after = bigger->named_parameters();
  ASSERT_EQ(before.size(), after.size());
  for (std::size_t p = 0; p < before.size(); ++p) {
    const auto& [name, old_weight] = before[p];
    const Tensor& new_weight = after[p].second;
    if (name != "tok_embeddings.weight" && name != "output.weight") {
      EXPECT_TRUE(std::equal(old_weight.value().begin(), old_weight.value().end(),
                             new_weight.value().begin()))
          << name;
      continue;
    }
    for (std::size_t id = 0; id < base.vocab_size(); ++id)  // the base's ids keep their meaning
      EXPECT_EQ(row(new_weight, id), row(old_weight, id)) << name << " row " << id;
    double sum_sq = 0;  // the new rows: drawn as the model's init draws them, N(0, 0.02^2)
    std::size_t n = 0;
    for (std::size_t id = base.vocab_size(); id < grown.vocab_size(); ++id)
      for (Scalar v : row(new_weight, id)) {
        sum_sq += static_cast<double>(v) * v;
        ++n;
      }
    EXPECT_NEAR(std::sqrt(sum_sq / static_cast<double>(n)), 0.02, 0.006) << name;
  }
  // Seeded: the same rows again.
  const auto again = grow_vocabulary(model, base, grown, 9);
  EXPECT_EQ(row(again->tok_embeddings.weight, grown.vocab_size() - 1),
            row(bigger->tok_embeddings.weight, grown.vocab_size() - 1));
}

TEST(ChatBase, ABaseWithEveryTokenGrowsNothing) {
  const TextTokenizer base =
      chat_tokenizer(TextTokenizer(Tokenizer::from_text(glass_test::kSmallText)), conversations());
  std::vector<char32_t> added = {U'x'};
  const TextTokenizer same = chat_tokenizer(base, conversations(), &added);
  EXPECT_TRUE(added.empty());
  EXPECT_EQ(same.vocabulary(), base.vocabulary());
}

TEST(ChatBase, AChatBaseLackingACharacterKeepsItsChatTokensRowsByTheirText) {
  // The base has the chat tokens after its characters; a new character comes before them, so
  // their ids move up by one, and their rows with them.
  const TextTokenizer base =
      TextTokenizer(Tokenizer::from_text(glass_test::kSmallText)).with_chat_tokens();
  const std::vector<Conversation> more = parse_chat_jsonl(
      R"({"messages":[{"role":"user","content":"to be"},{"role":"assistant","content":"!"}]})",
      "more.jsonl");
  const TextTokenizer grown = chat_tokenizer(base, more);
  const std::int32_t old_end = *base.special_id(SpecialToken::kImEnd);
  const std::int32_t new_end = *grown.special_id(SpecialToken::kImEnd);
  ASSERT_GT(new_end, old_end);
  const Decoder model(glass_test::small_config(base.vocab_size()), 6);
  const auto bigger = grow_vocabulary(model, base, grown, 7);
  EXPECT_EQ(row(bigger->output.weight, static_cast<std::size_t>(new_end)),
            row(model.output.weight, static_cast<std::size_t>(old_end)));
}

TEST(ChatBase, ABpeBaseGrowsByTheTwoChatTokensAloneAfterItsMerges) {
  const TextTokenizer base(BpeTokenizer::train(U"o gato e o rato; o pato, o gato", 280));
  ASSERT_FALSE(base.has_chat_tokens());
  std::vector<char32_t> added{U'x'};
  // "+", digits and "?" are spelled by byte tokens: no character is added.
  const TextTokenizer grown = chat_tokenizer(base, conversations(), &added);
  EXPECT_TRUE(added.empty());
  EXPECT_EQ(grown.vocab_size(), base.vocab_size() + 2);
  EXPECT_EQ(*grown.special_id(SpecialToken::kImStart),
            static_cast<std::int32_t>(base.vocab_size()));
  EXPECT_EQ(*grown.special_id(SpecialToken::kImEnd),
            static_cast<std::int32_t>(base.vocab_size() + 1));
  // Ordinary text encodes to the same ids as before.
  EXPECT_EQ(grown.encode_prompt(U"o gato + 42?", UnknownPolicy::kRefuse),
            base.encode_prompt(U"o gato + 42?", UnknownPolicy::kRefuse));

  const Decoder model(glass_test::small_config(base.vocab_size()), 5);
  const auto bigger = grow_vocabulary(model, base, grown, 9);
  EXPECT_EQ(bigger->config().vocab_size, base.vocab_size() + 2);
  for (std::size_t id = 0; id < base.vocab_size(); ++id) {  // every base row, bit for bit
    ASSERT_EQ(row(bigger->tok_embeddings.weight, id), row(model.tok_embeddings.weight, id)) << id;
    ASSERT_EQ(row(bigger->output.weight, id), row(model.output.weight, id)) << id;
  }
  EXPECT_NE(row(bigger->output.weight, base.vocab_size()),
            row(bigger->output.weight, base.vocab_size() + 1));  // drawn, not copied
}

TEST(ChatBatches, EachRowIsOneConversationShiftedWithItsMaskAndPadding) {
  const TextTokenizer tokenizer =
      chat_tokenizer(TextTokenizer(Tokenizer::from_text(glass_test::kSmallText)), conversations());
  const ChatTokens c = render_chat(tokenizer, conversations()[0]);
  const std::size_t n = c.ids.size(), T = n + 3;
  ChatBatches batches({c}, 2, T, 99, 1);
  IdArray x, y;
  batches.next(x, y);
  ASSERT_EQ(x.shape()[0], 2u);
  ASSERT_EQ(x.shape()[1], n - 1);  // the batch's longest row, not the window
  for (std::size_t t = 0; t < n - 1; ++t) {
    EXPECT_EQ(x(0, t), c.ids[t]) << t;         // inputs
    EXPECT_EQ(y(0, t), c.labels[t + 1]) << t;  // next labels, masked
  }
  // Padded to a wider width: padding inputs, ignored targets.
  const Batch wide = batches.rows({0}, T);
  ASSERT_EQ(wide.context, T);
  for (std::size_t t = 0; t < T; ++t) {
    EXPECT_EQ(wide.x[t], t + 1 < n ? c.ids[t] : 99) << t;
    EXPECT_EQ(wide.y[t], t + 1 < n ? c.labels[t + 1] : kIgnoreLabel) << t;
  }
  EXPECT_THROW(batches.rows({0}, n - 2), std::invalid_argument);  // narrower than the row
  EXPECT_THROW(batches.rows({1}), std::out_of_range);
  // The counted targets are the answer "42" and its <|im_end|>.
  std::size_t counted = 0;
  for (std::size_t t = 0; t < n - 1; ++t) counted += y(0, t) >= 0 ? 1 : 0;
  EXPECT_EQ(counted, 3u);
  const std::int32_t end = *tokenizer.special_id(SpecialToken::kImEnd);
  EXPECT_NE(std::find(y.begin(), y.end(), end), y.end());
  // A conversation longer than the window plus one is refused.
  EXPECT_THROW(ChatBatches({c}, 2, n - 2, 0, 1), std::invalid_argument);
}

namespace {

/// `k` conversations whose answers have 1 to k characters, so their lengths differ.
std::vector<Conversation> conversations_of_many_lengths(std::size_t k) {
  std::string lines;
  for (std::size_t i = 1; i <= k; ++i)
    lines += R"({"messages":[{"role":"user","content":"to be"},{"role":"assistant","content":")" +
             std::string(i, 'e') + "\"}]}\n";
  return parse_chat_jsonl(lines, "lengths.jsonl");
}

}  // namespace

TEST(ChatBatches, ABatchIsAsWideAsItsLongestRowAndDrawsFromOneLengthBucket) {
  const std::vector<Conversation> set = conversations_of_many_lengths(40);
  const TextTokenizer tokenizer =
      chat_tokenizer(TextTokenizer(Tokenizer::from_text(glass_test::kSmallText)), set);
  std::vector<ChatTokens> rendered;
  std::size_t longest = 0;
  for (const Conversation& c : set) {
    rendered.push_back(render_chat(tokenizer, c));
    longest = std::max(longest, rendered.back().ids.size());
  }
  const std::size_t T = longest + 10;
  ChatBatches batches(rendered, 4, T, 0, 3, 4);  // 4 buckets of 10 lengths
  std::set<std::size_t> widths, bucket_of_rows;
  std::vector<std::size_t> drawn(rendered.size(), 0);
  for (int i = 0; i < 400; ++i) {
    const Batch b = batches.next_batch();
    ASSERT_EQ(b.starts.size(), 4u);
    std::size_t widest = 0;
    std::set<std::size_t> buckets;
    for (std::size_t r : b.starts) {
      widest = std::max(widest, rendered[r].ids.size() - 1);
      buckets.insert(r / 10);  // answers of r + 1 characters: sorted order is file order
      ++drawn[r];
    }
    EXPECT_EQ(b.context, widest);  // its own longest row, not the window T
    EXPECT_EQ(buckets.size(), 1u);
    widths.insert(b.context);
  }
  EXPECT_GT(widths.size(), 4u);  // the widths vary with the rows
  for (std::size_t r = 0; r < drawn.size(); ++r) EXPECT_GT(drawn[r], 0u) << r;  // all drawn
  // One bucket: rows from anywhere in the set.
  ChatBatches one(rendered, 4, T, 0, 3, 1);
  std::set<std::size_t> spread;
  for (int i = 0; i < 50; ++i)
    for (std::size_t r : one.next_batch().starts) spread.insert(r / 10);
  EXPECT_EQ(spread.size(), 4u);
}

TEST(ChatBatches, TheLossOfABatchAtItsOwnWidthIsTheLossAtTheFullWindow) {
  const std::vector<Conversation> set = conversations_of_many_lengths(12);
  const TextTokenizer tokenizer =
      chat_tokenizer(TextTokenizer(Tokenizer::from_text(glass_test::kSmallText)), set);
  std::vector<ChatTokens> rendered;
  for (const Conversation& c : set) rendered.push_back(render_chat(tokenizer, c));
  const std::size_t T = rendered.back().ids.size() + 5;
  ChatBatches batches(rendered, 3, T, 1, 5, 3);
  const Decoder model(glass_test::small_config(tokenizer.vocab_size(), T), 4);
  for (int i = 0; i < 4; ++i) {
    const Batch own = batches.next_batch();
    ASSERT_LT(own.context, T);
    const Batch full = batches.rows(own.starts, T);  // the same rows, padded to the window
    const double own_loss = cross_entropy(model.forward(to_id_array(own.x, 3, own.context)),
                                          to_id_array(own.y, 3, own.context))
                                .item();
    const double full_loss =
        cross_entropy(model.forward(to_id_array(full.x, 3, T)), to_id_array(full.y, 3, T)).item();
    EXPECT_NEAR(own_loss, full_loss, 1e-6 * std::abs(full_loss)) << i;
  }
}

TEST(ChatTrainer, AResumedFineTuneContinuesExactly) {
  const fs::path dir = glass_test::temp_dir("glass_chat_trainer");
  glass_test::write_small_checkpoint((dir / "base").string(), 64, 3);
  std::string lines;
  lines +=
      R"({"messages":[{"role":"user","content":"to be + 1?"},{"role":"assistant","content":"42"}]})"
      "\n"
      R"({"messages":[{"role":"user","content":"the question"},{"role":"assistant","content":"be"}]})"
      "\n"
      R"({"messages":[{"role":"user","content":"or not"},{"role":"assistant","content":"to be"}]})"
      "\n";
  glass_test::write_file(dir / "chat.jsonl", lines);
  auto options = [&](const std::string& out, long iters, bool resume) {
    TrainOptions o;
    o.chat.enabled = true;
    o.chat.base_dir = resume ? "" : (dir / "base").string();
    o.data_path = (dir / "chat.jsonl").string();
    o.out_dir = (dir / out).string();
    o.iters = iters;
    o.batch_size = 2;
    o.decay_iters = 4;  // the same schedule in the run of 2 steps and in that of 4
    o.eval_every = 2;
    o.eval_iters = 1;
    o.warmup = 1;
    o.sample_tokens = 3;
    o.resume = resume;
    o.iters_from_save = false;
    return o;
  };
  std::ostringstream out;
  Trainer straight(options("straight", 4, false), out);
  straight.run();
  {
    Trainer first(options("resumed", 2, false), out);
    first.run();
  }
  Trainer second(options("resumed", 4, true), out);
  EXPECT_EQ(second.options().chat.base_dir, (dir / "base").string());  // from the save
  second.run();
  const auto a = straight.model().parameters(), b = second.model().parameters();
  for (std::size_t p = 0; p < a.size(); ++p)
    EXPECT_TRUE(std::equal(a[p].value().begin(), a[p].value().end(), b[p].value().begin())) << p;
  EXPECT_EQ(straight.log().back().val_loss, second.log().back().val_loss);
  fs::remove_all(dir);
}

TEST(ChatTrainer, TheLossOnAllCountsEveryTokenValidatesOnTheAnswersAndIsKeptOnResume) {
  const fs::path dir = glass_test::temp_dir("glass_chat_loss_on_all");
  glass_test::write_small_checkpoint((dir / "base").string(), 64, 3);
  glass_test::write_file(
      dir / "chat.jsonl",
      R"({"messages":[{"role":"user","content":"to be + 1?"},{"role":"assistant","content":"42"}]})"
      "\n"
      R"({"messages":[{"role":"user","content":"the question"},{"role":"assistant","content":"be"}]})"
      "\n"
      R"({"messages":[{"role":"user","content":"or not"},{"role":"assistant","content":"to be"}]})"
      "\n");
  auto options = [&](const std::string& out, bool all, long iters, bool resume) {
    TrainOptions o;
    o.chat.enabled = true;
    o.chat.base_dir = resume ? "" : (dir / "base").string();
    o.chat.loss_on_all = all;
    o.chat.loss_on_given = true;
    o.data_path = (dir / "chat.jsonl").string();
    o.out_dir = (dir / out).string();
    o.iters = iters;
    o.batch_size = 2;
    o.eval_every = 2;
    o.eval_iters = 1;
    o.warmup = 1;
    o.sample_tokens = 3;
    o.resume = resume;
    o.iters_from_save = false;
    return o;
  };
  std::ostringstream answers_out, all_out;
  std::vector<LogRow> answers_log, all_log;
  {  // (each trainer holds its run directory's lock until it is gone)
    Trainer answers(options("answers", false, 2, false), answers_out);
    answers.run();
    answers_log = answers.log();
    Trainer all(options("all", true, 2, false), all_out);
    all.run();
    all_log = all.log();
  }
  // The training set is the first two conversations (the last tenth, one, validates). On every
  // token, each conversation of n ids has n - 1 targets; the banner counts them.
  const Checkpoint saved = load_checkpoint((dir / "all").string());
  const std::vector<Conversation> read = read_chat_jsonl((dir / "chat.jsonl").string());
  std::size_t every = 0, answer_targets = 0;
  for (std::size_t c = 0; c < 2; ++c) {
    const ChatTokens t = render_chat(saved.tokenizer(), read[c]);
    every += t.ids.size() - 1;
    answer_targets += static_cast<std::size_t>(
        std::count_if(t.labels.begin() + 1, t.labels.end(), [](std::int32_t l) { return l >= 0; }));
  }
  EXPECT_NE(all_out.str().find("2 conversations (" + std::to_string(every) + " target characters)"),
            std::string::npos)
      << all_out.str();
  EXPECT_NE(answers_out.str().find("2 conversations (" + std::to_string(answer_targets) +
                                   " answer characters)"),
            std::string::npos)
      << answers_out.str();
  EXPECT_NE(all_out.str().find("the training loss counts every token"), std::string::npos);
  // Same base, same validation targets: the loss before any step is the same in both runs; the
  // runs then differ (other targets, other gradients).
  ASSERT_FALSE(answers_log.empty());
  ASSERT_FALSE(all_log.empty());
  EXPECT_EQ(answers_log.front().step, 0);
  EXPECT_EQ(all_log.front().step, 0);
  EXPECT_EQ(answers_log.front().val_loss, all_log.front().val_loss);
  EXPECT_NE(answers_log.back().val_loss, all_log.back().val_loss);
  // The choice is recorded and a resume keeps it; asking for the other one is refused.
  ASSERT_TRUE(load_train_recipe((dir / "all").string()).has_value());
  EXPECT_TRUE(load_train_recipe((dir / "all").string())->chat_loss_on_all);
  EXPECT_FALSE(load_train_recipe((dir / "answers").string())->chat_loss_on_all);
  TrainOptions other = options("all", false, 4, true);
  std::ostringstream quiet;
  EXPECT_THROW({ Trainer refused(other, quiet); }, OptionError);
  TrainOptions kept = options("all", false, 4, true);
  kept.chat.loss_on_given = false;
  Trainer resumed(kept, quiet);
  EXPECT_TRUE(resumed.options().chat.loss_on_all);
  fs::remove_all(dir);
}
