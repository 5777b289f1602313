// A chat fine-tune in the Trainer (train/trainer.hpp, TrainOptions::chat): the conversations read
// from their JSONL files, the base checkpoint loaded with its vocabulary grown for the chat tokens
// (train/chat_base.hpp), the conversations rendered by the chat template with their loss mask
// (train/chat_batches.hpp), the exact validation loss over the answers, the banner and a sample
// answer. The loop, the saves and the resume are the text run's.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/sha256.hpp"
#include "data/text.hpp"
#include "sample/sampler.hpp"
#include "train/chat_base.hpp"
#include "train/chat_batches.hpp"
#include "train/trainer.hpp"

namespace glass {

namespace fs = std::filesystem;

namespace {

/// The SHA-256 of a file's bytes (hex). Throws CheckpointError when it cannot be read.
std::string file_sha256(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in) throw CheckpointError(path.string() + ": cannot be read");
  return sha256_hex(bytes.str());
}

}  // namespace

void Trainer::read_conversations() {
  const TrainOptions& o = options_;
  chat_ = std::make_unique<ChatRun>();
  chat_->train = read_chat_jsonl(o.data_path);  // ChatDataError naming the line and field
  const std::string name = fs::path(o.data_path).filename().string();
  if (!o.chat.val_path.empty()) {
    chat_->val = read_chat_jsonl(o.chat.val_path);
    chat_->val_source = fs::path(o.chat.val_path).filename().string();
    return;
  }
  // No validation file: the last tenth of the training file's conversations (at least one).
  if (chat_->train.size() < 2)
    throw OptionError("val", "",
                      fmt::format("is needed: {} holds one conversation, none to hold out for the "
                                  "validation loss",
                                  name));
  const std::size_t n_val = std::max<std::size_t>(1, chat_->train.size() / 10);
  chat_->val.assign(chat_->train.end() - static_cast<long>(n_val), chat_->train.end());
  chat_->train.resize(chat_->train.size() - n_val);
  chat_->val_source = fmt::format("the last {} conversations of {}", n_val, name);
}

void Trainer::start_from_base() {
  TrainOptions& o = options_;
  Checkpoint base = load_checkpoint(o.chat.base_dir);  // CheckpointError: not a checkpoint
  if (!base.warning().empty()) out_ << "warning: " << base.warning() << "\n";
  o.chat.base_sha256 = file_sha256(fs::path(base.files_dir()) / "model.safetensors");
  std::vector<Conversation> all = chat_->train;
  all.insert(all.end(), chat_->val.begin(), chat_->val.end());
  const TextTokenizer base_tokenizer = base.tokenizer();
  const TextTokenizer tokenizer = chat_tokenizer(base_tokenizer, all, &chat_->added);
  chat_->base_vocab = base_tokenizer.vocab_size();
  model_ = base.release_model();
  if (tokenizer.vocab_size() != base_tokenizer.vocab_size())
    model_ = grow_vocabulary(*model_, base_tokenizer, tokenizer, o.seed);
  tokenizer_.emplace(tokenizer);
  if (o.ops_given) model_->set_ops_path(o.model.ops_path);
  o.model = model_->config();
  o.tokenizer = tokenizer_->kind();
}

void Trainer::render_conversations() {
  TrainOptions& o = options_;
  const std::size_t window = o.model.context_length;
  // On resume the context is the recorded one; a new fine-tune without --context takes the
  // longest conversation's (less its last token, which is only predicted).
  const bool choose_context = !o.resume && !o.recipe_given.context;
  const std::size_t limit = choose_context ? window : std::min(o.context, window);
  const char* unit = tokenizer_->unit();
  // `every_token`: the loss on every token (TrainOptions::chat.loss_on_all), not the answers'.
  auto render_all = [&](const std::vector<Conversation>& conversations, const std::string& file,
                        std::vector<ChatTokens>& rendered, std::size_t& targets, bool every_token) {
    for (const Conversation& c : conversations) {
      ChatTokens t = render_chat(*tokenizer_, c);
      if (every_token) t.labels = t.ids;
      const std::size_t n = t.ids.size();
      if (n > limit + 1)
        throw ChatTooLongError(
            fmt::format("{}:{}: the conversation is {} {} long; a window of {} {} ({}) holds "
                        "conversations of at most {} (it reads {} and predicts the last)",
                        file, c.line, n, unit, limit, unit,
                        limit == window ? "the model's context" : "the context given", limit + 1,
                        limit),
            c.line, n, limit + 1);
      targets += static_cast<std::size_t>(std::count_if(t.labels.begin() + 1, t.labels.end(),
                                                        [](std::int32_t l) { return l >= 0; }));
      rendered.push_back(std::move(t));
    }
  };
  render_all(chat_->train, fs::path(o.data_path).filename().string(), chat_->train_tokens,
             chat_->train_targets, o.chat.loss_on_all);
  render_all(chat_->val,
             o.chat.val_path.empty() ? fs::path(o.data_path).filename().string()
                                     : fs::path(o.chat.val_path).filename().string(),
             chat_->val_tokens, chat_->val_targets, false);  // validated on the answers
  if (chat_->train_targets == 0 || chat_->val_targets == 0)
    throw OptionError("chat", o.data_path,
                      "holds no target to train on (no assistant token in its conversations)");
  if (choose_context) {
    std::size_t longest = 0;
    for (const auto* set : {&chat_->train_tokens, &chat_->val_tokens})
      for (const ChatTokens& t : *set) longest = std::max(longest, t.ids.size());
    o.context = std::max<std::size_t>(1, longest - 1);
  }
  // The validation conversations' ids, one after another: the interpretability record's probe.
  std::vector<std::int32_t> ids;
  for (const ChatTokens& t : chat_->val_tokens) ids.insert(ids.end(), t.ids.begin(), t.ids.end());
  std::size_t answer_bytes = 0;
  for (const Conversation& c : chat_->val)
    for (const ChatMessage& m : c.messages)
      if (m.role == ChatRole::kAssistant) answer_bytes += m.content.size();
  corpus_ = Corpus{std::make_shared<const TokenIds>(TokenIds::from(ids)), 0, answer_bytes};
}

double Trainer::chat_val_loss() {
  // Every validation conversation once, batch by batch; each batch's mean weighted by its
  // counted targets: the mean over every answer token of the set.
  const std::size_t n = chat_->val_rows->size(), B = options_.batch_size;
  double sum = 0;
  std::size_t counted = 0;
  Ids x, y;
  for (std::size_t first = 0; first < n; first += B) {
    chat_->val_rows->rows_in_order(first, std::min(B, n - first), x, y);
    const std::size_t c = counted_targets(y);
    sum += parallel_->loss(x, y) * static_cast<double>(c);
    counted += c;
  }
  return sum / static_cast<double>(counted);
}

void Trainer::print_chat_banner() {
  const TrainOptions& o = options_;
  out_ << fmt::format(
      "chat fine-tune of {}: {} conversations ({} {} {}s) from {}; validation: {} "
      "({} answer {}s)\n",
      o.chat.base_dir, chat_->train.size(), chat_->train_targets,
      o.chat.loss_on_all ? "target" : "answer", tokenizer_->unit(false), o.data_path,
      chat_->val_source, chat_->val_targets, tokenizer_->unit(false));
  if (chat_->base_vocab > 0 && chat_->base_vocab != vocab_size()) {
    std::string chars;
    for (char32_t c : chat_->added) chars += (chars.empty() ? "" : " ") + describe_char(c);
    out_ << fmt::format(
        "vocabulary grown from {} to {} ids: the chat tokens <|im_start|> <|im_end|>{}{}; their "
        "embedding and output rows are new (N(0, {:g}^2), seed {}), every other row is the "
        "base's\n",
        chat_->base_vocab, vocab_size(), chat_->added.empty() ? "" : " and the characters ", chars,
        o.model.init_std, o.seed);
  }
  out_ << fmt::format(
      "each row of a batch is one conversation, padded to the batch's longest (a batch draws "
      "from one of {} length buckets; the window holds {} {}); {}\n",
      kChatLengthBuckets, o.context, tokenizer_->unit(),
      o.chat.loss_on_all
          ? "the training loss counts every token (the template and the questions too: loss on "
            "all); the validation loss counts the answers and their <|im_end|>"
          : "the loss counts only the answers and their <|im_end|>");
}

std::string Trainer::chat_sample() {
  // The answer to the first validation conversation's prompt (its messages but the last).
  const Conversation& c = chat_->val.front();
  const std::vector<ChatMessage> prompt(c.messages.begin(), c.messages.end() - 1);
  const std::vector<std::int32_t> ids = render_chat_prompt(*tokenizer_, prompt);
  SamplingOptions sampling;
  sampling.temperature = 0.8;
  const auto out =
      generate(*model_, ids, options_.sample_tokens, options_.context, sampling, sample_rng_);
  std::vector<std::int32_t> answer;
  const auto end = tokenizer_->special_id(SpecialToken::kImEnd);
  for (std::int32_t id : out) {
    if (end && id == *end) break;
    answer.push_back(id);
  }
  return fmt::format("{} -> {}", c.messages[c.messages.size() - 2].content,
                     tokenizer_->decode_generated(answer));
}

}  // namespace glass
