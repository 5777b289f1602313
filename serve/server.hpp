#pragma once
// `glass serve`: a small HTTP server (cpp-httplib) showing a model in the browser, live.
//
//   GET  /                     the live inspector page (web/live.html)
//   GET  /inspector?prompt=T   the static inspector page of `glass inspect --html` for prompt T
//   GET  /api/info             the model: config, vocabulary, step, limits, probe prompt, status
//   POST /api/inspect          {"prompt": T, "top_k": K}: attention weights of every layer and
//                              head, logits and top-k next tokens at every position, the shape
//                              and min/max/mean of every snapshot
//   POST /api/sample           {"prompt", "temperature", "top_k", "top_p", "seed", "n"}: the text
//                              of n generated tokens, streamed as they are chosen (text/plain)
//   POST /api/chat             {"messages": [{"role", "content"}, ...], "temperature", "top_k",
//                              "top_p", "seed", "n", ...}: the assistant's answer to the last
//                              user message by the chat template, streamed as JSON lines, the
//                              last saying how it ended (serve/routes_chat.cpp); 400 for a
//                              model without the chat tokens
//   POST /api/next             {"prompt" or "tokens", "temperature", "top_k", "top_p", ...}: the
//                              probabilities the sampler draws the token after the prompt
//                              from (sample/sampler.hpp, generation_probs)
//   GET  /api/log?since=S      the per-step log rows with step > S (RUN/steps.csv) and the
//                              evaluations of the current save (log.csv)
//   GET  /api/evals?since=K    the evaluations kept whose index is K or more: their step, a sample
//                              and the attention of the fixed probe prompt (the first save's and
//                              the last max_evaluations are kept)
//   POST /api/lens             {"prompt": T, "top_k": K}: the logit lens (interp/logit_lens.hpp):
//                              at every residual-stream point and position the top-k next
//                              tokens and the probability of the true next one
//   POST /api/ablate           {"prompt": T, "heads": [[layer, head], ...], "mode": "zero" |
//                              "mean"}: the next-token distribution with and without those heads
//   POST /api/dla              {"prompt": T, "target": TOKEN, "position": N}: the logit of TOKEN
//                              (default: the most probable) at N (default: the last) split into
//                              the direct effects of the embeddings, heads and MLPs
//   POST /api/attribution      {"prompt": T, "corrupted": C, "metric": "logit_diff" | "log_prob"}:
//                              attribution patching of every head and MLP next to exact patching
//   GET  /api/interp           the head scores recorded at each save seen (SAVE/interp.json),
//                              with the save's step and losses
//   GET  /features             the SAE feature browser page, when the run holds an SAE; its
//                              JSON: /api/features, /api/features/latent?latent=N,
//                              /api/features/prompt?prompt=T (serve/routes_features.cpp)
//
// A token is a character of a character model or a subword of a BPE model (its tokenizer.json):
// prompts go through the checkpoint's tokenizer, the context counts tokens, and the answers give
// each token's id and text.
//
// Safe by default: it binds 127.0.0.1 unless told otherwise; it serves only the pages built into
// the program (no request path reaches the file system); bodies are at most 64 KiB and prompts
// at most the model's context length; bad JSON or parameters answer 400 with {"error": message},
// unknown paths 404. Watching a run directory, it loads each new save that RUN/current points
// to (the previous model answers until the new one is ready).

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "inspect/probe_history.hpp"
#include "serve/interp_lab.hpp"
#include "serve/live_log.hpp"

namespace httplib {  // <httplib.h>
struct Request;
struct Response;
}  // namespace httplib

namespace glass {

class BoundedHttpServer;  // serve/bounded_http.hpp

class Checkpoint;     // checkpoint/checkpoint.hpp
struct FeatureCache;  // serve/routes_features.cpp
class SaeFeatures;    // inspect/sae_features.hpp

/// A server that cannot start: the address cannot be bound (port in use, no permission, unknown
/// host) or the checkpoint directory does not exist. The message says which and what to do.
class ServeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// True for the addresses only this machine can reach: localhost, 127.x.x.x, ::1.
bool is_loopback_host(const std::string& host);

/// What `glass serve` (and `glass train --serve`) serve.
struct ServeOptions {
  std::string checkpoint;          ///< a run directory (watched) or a checkpoint directory
  std::string host = "127.0.0.1";  ///< address to bind; anything but loopback exposes the model
  int port = 8080;                 ///< 0 = any free port (see Server::port())
  std::string probe;               ///< prompt whose attention is kept at every save ("" = default)
  std::string data_path;           ///< the training text (its start is the default probe), or ""
  double poll_seconds = 0.5;       ///< how often the run directory is looked at
  std::size_t max_body_bytes = 64 * 1024;  ///< larger request bodies answer 413 (chunked ones too)
  double request_seconds = 10;  ///< to send a whole request (headers and body); slower ones get 408
  std::size_t max_reading = 32;  ///< connections sending their request at once; the oldest gets 408
  /// Names (or addresses) besides 127.0.0.1, localhost, [::1] and `host` that the Host header of
  /// a request may give; any other answers 421 (a web page of another site reaching this server
  /// through DNS rebinding sends its own name).
  std::vector<std::string> allowed_hosts;
  std::size_t max_sample_tokens = 2000;  ///< most tokens one /api/sample may ask for
  std::size_t eval_sample_tokens = 120;  ///< tokens sampled at each new save
  /// Evaluations kept for /api/evals besides the first save's: the newest ones (older ones are
  /// dropped, so the server's memory and the answer to since=0 stay bounded on a long run).
  std::size_t max_evaluations = 200;
  /// Where a warning goes (a new save that cannot be loaded while an older one is served);
  /// empty: standard error, as "warning: MESSAGE". Called from the watching thread.
  std::function<void(const std::string&)> warn;
};

/// The server. Construction checks the options and loads the checkpoint if there is one
/// (throws ServeError for a missing directory, CheckpointError for a broken checkpoint); a run
/// directory without a save yet is watched until the trainer's first save. start() binds and
/// answers requests on background threads until stop() (or destruction).
class Server {
 public:
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds host:port and starts answering; returns the bound port (the free one chosen when
  /// port is 0). Throws ServeError when the address cannot be bound. (cpp-httplib sets SIGPIPE
  /// to be ignored in the whole process when it listens: a client that leaves mid-answer makes
  /// a write fail, it does not end the program.)
  int start();
  /// Stops answering and joins the threads; safe to call more than once.
  void stop();
  int port() const { return port_; }
  /// "http://HOST:PORT/".
  std::string url() const;
  /// "" or why no model is served yet (e.g. waiting for the first save), or why the newest save
  /// is not the one served (it cannot be loaded: the older model answers meanwhile).
  std::string status() const;
  /// Holds back every forward pass of the server (requests, and the evaluation of a new save)
  /// until the returned lock is released: they run one at a time, under this lock.
  std::unique_lock<std::mutex> hold_compute() { return std::unique_lock(compute_mutex_); }
  /// How many times the watcher has looked at the run directory for a new save (it looks every
  /// ServeOptions::poll_seconds), and how many new saves it has read and started to evaluate:
  /// what a test waits for instead of sleeping.
  std::size_t looks() const { return looks_.load(); }
  std::size_t evaluations_started() const { return evaluations_started_.load(); }

 private:
  /// One save seen by the server: its answer in /api/evals, as JSON text.
  struct Evaluation {
    std::size_t index;  ///< the how-manieth save the server evaluated (0 = the first)
    std::string json;
  };
  /// Registers the pages and the API below on http_ (serve/routes.cpp), with the rules every
  /// request passes first (refusal) and the JSON error answers.
  void add_routes();
  // The answers, one per route; what they throw becomes a 4xx/5xx answer (add_routes).
  // Pages (serve/routes.cpp): GET /inspector.
  void answer_inspector(const httplib::Request& req, httplib::Response& res);
  // The model (serve/routes_model.cpp): GET /api/info, POST /api/inspect, /api/sample, /api/next.
  void answer_info(const httplib::Request& req, httplib::Response& res);
  void answer_inspect(const httplib::Request& req, httplib::Response& res);
  void answer_sample(const httplib::Request& req, httplib::Response& res);
  void answer_next(const httplib::Request& req, httplib::Response& res);
  // The chat (serve/routes_chat.cpp): POST /api/chat.
  void answer_chat(const httplib::Request& req, httplib::Response& res);
  // The run (serve/routes_run.cpp): GET /api/log, /api/evals.
  void answer_log(const httplib::Request& req, httplib::Response& res);
  void answer_evals(const httplib::Request& req, httplib::Response& res);
  // The interpretability lab (serve/routes_interp.cpp): POST /api/lens, /api/ablate, GET
  // /api/interp.
  void answer_lens(const httplib::Request& req, httplib::Response& res);
  void answer_ablate(const httplib::Request& req, httplib::Response& res);
  void answer_dla(const httplib::Request& req, httplib::Response& res);
  void answer_attribution(const httplib::Request& req, httplib::Response& res);
  void answer_interp(const httplib::Request& req, httplib::Response& res);
  // The features page (serve/routes_features.cpp): GET /features, /api/features,
  // /api/features/latent, /api/features/prompt.
  void answer_features_page(const httplib::Request& req, httplib::Response& res);
  void answer_features(const httplib::Request& req, httplib::Response& res);
  void answer_feature_latent(const httplib::Request& req, httplib::Response& res);
  void answer_feature_prompt(const httplib::Request& req, httplib::Response& res);
  /// The browser of the SAE beside the served save, built on first use for each save (call it
  /// under the compute lock); nullptr after answering 404 when there is none or it cannot be
  /// used.
  const SaeFeatures* features_or_404(httplib::Response& res);
  /// "" when the Host and, for a POST, Content-Type and Origin headers are acceptable; else
  /// the status (421, 403, 415) through `status` and the reason.
  std::string refusal(const std::string& host, const std::string& method,
                      const std::string& content_type, const std::string& origin,
                      int& status) const;
  // Watching the run directory (serve/evaluations.cpp).
  void watch_loop();
  /// Loads the save `files_dir` unless it is the one served; returns false when it cannot be
  /// loaded (yet): the reason goes to `error` (if given) and, while no model is served, to status().
  bool load_if_new(const std::string& files_dir, std::string* error = nullptr);
  /// The probe_history.json of the save `files_dir` (inspect/probe_history.hpp); nullopt when it
  /// has none, or when it cannot be trusted (another run's, damaged): then said once as a warning
  /// and kept in history_error_ for /api/evals.
  std::optional<ProbeHistory> recorded_history(const Checkpoint& loaded,
                                               const std::string& files_dir);
  /// Records that the save `files_dir` could not be loaded (`why`): the status while no model
  /// is served; said once (status and warning) when the same save fails at two looks in a row.
  void note_load_failure(const std::string& files_dir, const std::string& why);
  /// The newest loaded save (its window: Checkpoint::window). Throws NoModel before the first.
  std::shared_ptr<const Checkpoint> model() const;

  ServeOptions options_;
  std::unique_ptr<BoundedHttpServer> http_;
  int port_ = 0;
  std::thread listen_thread_, watch_thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> looks_{0}, evaluations_started_{0};
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;

  mutable std::mutex state_mutex_;           // guards the fields below
  std::shared_ptr<const Checkpoint> model_;  // the newest loaded save
  std::string served_dir_;                   // the directory it was loaded from
  std::string status_;
  std::string failed_dir_;  // a save that could not be loaded at the last look ("" = none)
  bool failure_reported_ = false;
  std::string probe_;                                           // UTF-8, fixed at the first load
  std::vector<std::shared_ptr<const Evaluation>> evaluations_;  // the first, then the newest
  std::size_t evaluations_seen_ = 0;  // saves evaluated so far (the next index)
  long last_evaluated_step_ = -1;     // the newest step among them
  std::string history_error_;         // why a save's probe_history.json is not shown, or ""
  StepLog step_log_;
  serve_api::InterpHistory interp_history_;  // the saves' records seen so far (its own lock)

  std::mutex compute_mutex_;  // one forward pass at a time; never held with state_mutex_
  std::shared_ptr<FeatureCache> features_;  // the SAE browser; guarded by compute_mutex_
};

}  // namespace glass
