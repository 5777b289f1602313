// `glass chat`: talk with a checkpoint fine-tuned on conversations (sample/chat.hpp). Each line
// of standard input is a user turn; the answer streams as it is drawn. The history stays in the
// KV cache: a turn feeds the model its own tokens only.
//
//   glass chat -m DIR [-p TEXT] [--system TEXT] [-n N] [--temp X] [--top-k K] [--top-p P]
//              [--min-p P] [--repeat-penalty X] [--repeat-last-n N] [-s S] [--best] [-t N]
//              [--ops fast|reference]
//
// /reset starts a new conversation, /quit (or Ctrl-D) leaves, Ctrl-C stops an answer. When a
// turn does not fit in what is left of the model's window, it is not sent: the command says so
// and offers /reset (earlier turns are never dropped silently).

#include <unistd.h>

#include <iostream>
#include <string>

#include <fmt/format.h>

#include "checkpoint/checkpoint.hpp"
#include "cli/commands.hpp"
#include "cli/sample_flags.hpp"
#include "cli/stop_signals.hpp"
#include "cli/threads.hpp"
#include "cli/validators.hpp"
#include "data/text.hpp"
#include "sample/chat.hpp"
#include "sample/run.hpp"

namespace {

using glass::cli::CommandError;

struct ChatFlags {
  std::string checkpoint;
  std::string prompt;
  std::string system;
  glass::ChatOptions chat;
  bool best = false;
  bool raw = false;  ///< write the answers' bytes unchanged (--raw)
  std::string ops = "fast";
  int threads = 0;
};

/// The session on a loaded save; a base model's tokenizer (no chat tokens) is refused with the
/// command that fine-tunes it.
glass::ChatSession open_session(const glass::Checkpoint& loaded, const ChatFlags& f) {
  try {
    return glass::ChatSession(loaded, f.chat, f.system);
  } catch (const glass::NoChatTokensError& e) {
    throw CommandError(fmt::format(
        "{} {}; fine-tune it on conversations first (glass finetune), then chat with the "
        "fine-tuned checkpoint",
        f.checkpoint, e.what()));
  }
}

/// What ended an answer, when it was not <|im_end|>: a note on standard error.
void say_how_it_ended(const glass::ChatAnswer& a, const glass::ChatSession& s, const char* unit) {
  if (a.end == glass::AnswerEnd::kStopped) std::cerr << "(answer stopped)\n";
  if (a.end == glass::AnswerEnd::kTokenCap)
    std::cerr << fmt::format("(answer cut at {} {}: -n sets the most)\n", a.ids.size(), unit);
  if (a.end == glass::AnswerEnd::kWindowFull)
    std::cerr << fmt::format(
        "(answer cut: the conversation filled the model's window of {} {}; /reset starts a new "
        "one)\n",
        s.window(), unit);
}

/// One user turn: the answer streamed to standard output, a newline after it. A turn that
/// cannot be sent (no room left, a character the model does not know, text that is not UTF-8)
/// throws CommandError saying why; the history is unchanged then.
void one_turn(glass::ChatSession& session, const std::string& user, const char* unit, bool raw) {
  glass::ChatAnswer a;
  try {
    glass::cli::g_stop = 0;
    a = session.answer(
        user,
        [raw](const std::string& piece) { glass::write_generated_text(std::cout, piece, raw); },
        &glass::cli::g_stop);
  } catch (const glass::ChatContextFullError& e) {
    throw CommandError(std::string(e.what()) +
                       ". The turn was not sent; /reset starts a new conversation (-p: each run "
                       "is one), or say it in fewer " +
                       e.unit());
  } catch (const glass::UnknownCharacterError& e) {
    throw CommandError(std::string("the turn was not sent: ") + e.what());
  } catch (const glass::Utf8Error& e) {
    throw CommandError(std::string("the turn was not sent: it is not valid UTF-8: ") + e.what());
  }
  glass::write_generated_text(std::cout, "\n", raw);
  glass::cli::g_stop = 0;
  say_how_it_ended(a, session, unit);
}

/// The interactive loop: one turn per line of standard input until /quit or its end.
void chat_loop(glass::ChatSession& session, const char* unit, bool raw) {
  const bool terminal = ::isatty(STDIN_FILENO) != 0;
  std::cerr << fmt::format(
      "chat: the model's window holds {} {} of conversation. /reset starts a new conversation, "
      "/quit (or Ctrl-D) leaves, Ctrl-C stops an answer.\n",
      session.window(), unit);
  std::string line;
  while (true) {
    if (terminal) glass::write_generated_text(std::cout, "> ", raw);
    if (!std::getline(std::cin, line)) break;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      session.reset();
      std::cerr << "(new conversation)\n";
      continue;
    }
    try {
      one_turn(session, line, unit, raw);
    } catch (const CommandError& e) {
      std::cerr << "error: " << e.what() << "\n";
    }
  }
}

void run_chat(const ChatFlags& f, bool prompt_given) {
  glass::Checkpoint loaded = glass::load_checkpoint(f.checkpoint, f.best);
  if (!loaded.warning().empty()) std::cerr << "warning: " << loaded.warning() << "\n";
  loaded.model().set_ops_path(glass::parse_ops_path(f.ops));
  glass::cli::apply_threads(f.threads);
  glass::ChatSession session = open_session(loaded, f);
  glass::cli::install_quiet_stop_handlers();
  if (prompt_given)
    one_turn(session, f.prompt, loaded.unit(), f.raw);
  else
    chat_loop(session, loaded.unit(), f.raw);
  glass::cli::restore_default_signals();
}

}  // namespace

namespace glass::cli {

void add_chat_command(CLI::App& app) {
  auto f = std::make_shared<ChatFlags>();
  CLI::App* cmd = app.add_subcommand("chat", "Talk with a checkpoint fine-tuned on conversations.");
  cmd->add_option("-m,--checkpoint,--model", f->checkpoint,
                  "checkpoint directory whose tokenizer has the chat tokens (glass finetune)")
      ->required();
  CLI::Option* prompt = cmd->add_option("-p,--prompt", f->prompt,
                                        "one user turn: print the answer and leave (for scripts)");
  cmd->add_option("--system", f->system, "a system message that opens each conversation");
  cmd->add_option("-n,--tokens,--n-predict", f->chat.max_tokens,
                  "the most tokens of one answer (it ends earlier at <|im_end|>)")
      ->check(glass::cli::integer_in(1, 1'000'000, "an integer from 1 to 1000000"))
      ->capture_default_str();
  f->chat.sampling.temperature = 0.8;
  add_sampler_flags(cmd, f->chat.sampling);
  cmd->add_option("-s,--seed", f->chat.seed, "seed of the random draws (same seed, same answers)")
      ->check(glass::cli::kNonNegativeInteger)
      ->capture_default_str();
  cmd->add_flag("--best", f->best,
                "use best.safetensors (best validation loss) instead of the latest weights");
  cmd->add_flag("--raw", f->raw,
                "write the answers' bytes as they are: control characters (ESC, NUL, ...) reach "
                "the terminal and act on it (default: shown as visible escapes such as ␛ and ␀)");
  glass::cli::add_ops_option(cmd, f->ops);
  glass::cli::add_threads_option(cmd, f->threads);
  cmd->footer(
      "Examples:\n"
      "  glass chat -m runs/chat\n"
      "  glass chat -m runs/chat -p 'inverta a palavra casa' --temp 0\n"
      "In the session: /reset starts a new conversation, /quit or Ctrl-D leaves, Ctrl-C stops\n"
      "an answer (twice: leaves at once). The history stays in the KV cache; a turn that does\n"
      "not fit in the model's window is not sent (/reset makes room).");
  cmd->callback([f, prompt] { run_chat(*f, prompt->count() > 0); });
}

}  // namespace glass::cli
