// The routes of `glass serve`: which answer each path gets, the rules every request passes
// first (Host, Origin, Content-Type: Server::refusal), the JSON error answers, and the page
// routes themselves (the live page, the static inspector). The API's answers are in
// routes_model.cpp and routes_run.cpp. See server.hpp.

#include <filesystem>

#include <fmt/format.h>
#include <httplib.h>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/run_dir.hpp"
#include "data/text.hpp"
#include "inspect/inspect.hpp"
#include "inspect/loss_plot.hpp"
#include "inspect/render_html.hpp"
#include "inspect/web_page.hpp"
#include "serve/bounded_http.hpp"
#include "serve/requests.hpp"
#include "serve/server.hpp"

namespace glass {

namespace fs = std::filesystem;
using namespace serve_api;

namespace {

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

/// `handler` answering every error: the ones the client can fix are 400 with a message (a
/// prompt's unknown characters with the body field that maps them), no model yet is 503,
/// anything else 500 — never a crash.
httplib::Server::Handler guarded(Handler handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const BadRequest& e) {
      send_error(res, 400, e.what());
    } catch (const InspectError& e) {
      send_error(res, 400, e.what());
    } catch (const UnknownCharacterError& e) {  // the facts, and the fix in the API's words
      send_error(res, 400,
                 std::string(e.what()) +
                     " (send \"allow_unknown\": true to map them to the unknown id 0)");
    } catch (const std::invalid_argument& e) {
      send_error(res, 400, e.what());
    } catch (const NoModel& e) {
      send_error(res, 503, e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 500, "out of memory");
    } catch (const std::exception& e) {
      send_error(res, 500, e.what());
    }
  };
}

/// The methods `path` does not answer (GET and POST, PUT, PATCH, DELETE, other than `allowed`):
/// 405 Method Not Allowed, with an Allow header naming the one it answers (RFC 9110, 15.5.6).
void not_allowed(httplib::Server& s, const char* path, const std::string& allowed) {
  auto refuse = [path = std::string(path), allowed](const httplib::Request& req,
                                                    httplib::Response& res) {
    res.set_header("Allow", allowed);
    send_error(res, 405,
               fmt::format("{} answers {} only, not {}{}", path, allowed, req.method,
                           allowed == "POST" ? " (send a JSON body; see GET /api/info)" : ""));
  };
  if (allowed != "GET") s.Get(path, refuse);
  if (allowed != "POST") s.Post(path, refuse);
  s.Put(path, refuse);
  s.Patch(path, refuse);
  s.Delete(path, refuse);
}

}  // namespace

void Server::add_routes() {
  httplib::Server& s = *http_;
  // Server::answer_* as a guarded handler.
  auto answer = [this](void (Server::*member)(const httplib::Request&, httplib::Response&)) {
    return guarded([this, member](const httplib::Request& req, httplib::Response& res) {
      (this->*member)(req, res);
    });
  };

  // Before any route: the Host, Origin and Content-Type rules (refusal()).
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // RFC 9112, section 3.2: a request with more than one Host line is answered 400 (which of
    // them a proxy and this server read could differ).
    if (req.get_header_value_count("Host") > 1) {
      send_error(res, 400, "the request has more than one Host header (RFC 9112, section 3.2)");
      return httplib::Server::HandlerResponse::Handled;
    }
    // The same section: an HTTP/1.1 request without a Host line is answered 400. HTTP/1.0 had no
    // Host header; such a request names no host of this machine and is refused below (421).
    if (req.version == "HTTP/1.1" && !req.has_header("Host")) {
      send_error(res, 400, "an HTTP/1.1 request needs a Host header (RFC 9112, section 3.2)");
      return httplib::Server::HandlerResponse::Handled;
    }
    int status = 0;
    const std::string why =
        refusal(req.get_header_value("Host"), req.method, req.get_header_value("Content-Type"),
                req.get_header_value("Origin"), status);
    if (why.empty()) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, status, why);
    return httplib::Server::HandlerResponse::Handled;
  });

  s.Get("/", guarded([](const httplib::Request&, httplib::Response& res) {
          res.set_content(live_page(), "text/html; charset=utf-8");
        }));
  not_allowed(s, "/", "GET");
  // Each path answers one method; the others get 405 with the method it answers.
  struct Route {
    const char* path;
    const char* method;  // "GET" or "POST"
    void (Server::*member)(const httplib::Request&, httplib::Response&);
  };
  for (const Route& r : {Route{"/inspector", "GET", &Server::answer_inspector},
                         Route{"/api/info", "GET", &Server::answer_info},
                         Route{"/api/inspect", "POST", &Server::answer_inspect},
                         Route{"/api/sample", "POST", &Server::answer_sample},
                         Route{"/api/next", "POST", &Server::answer_next},
                         Route{"/api/chat", "POST", &Server::answer_chat},
                         Route{"/api/log", "GET", &Server::answer_log},
                         Route{"/api/evals", "GET", &Server::answer_evals},
                         Route{"/api/lens", "POST", &Server::answer_lens},
                         Route{"/api/ablate", "POST", &Server::answer_ablate},
                         Route{"/api/dla", "POST", &Server::answer_dla},
                         Route{"/api/attribution", "POST", &Server::answer_attribution},
                         Route{"/api/interp", "GET", &Server::answer_interp},
                         Route{"/features", "GET", &Server::answer_features_page},
                         Route{"/api/features", "GET", &Server::answer_features},
                         Route{"/api/features/latent", "GET", &Server::answer_feature_latent},
                         Route{"/api/features/prompt", "GET", &Server::answer_feature_prompt}}) {
    if (std::string(r.method) == "GET")
      s.Get(r.path, answer(r.member));
    else
      s.Post(r.path, answer(r.member));
    not_allowed(s, r.path, r.method);
  }

  // Errors without a body of their own (404 unknown path, 413 body too large, 400 a malformed
  // request line) still answer {"error": ...}.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = status_phrase(res.status);
    if (res.status == 404)
      message = "no such page or endpoint: " + req.path + " (see GET /api/info)";
    send_error(res, res.status, message);
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, 500, "internal error");
  });
}

void Server::answer_inspector(const httplib::Request& req, httplib::Response& res) {
  if (!req.has_param("prompt")) throw BadRequest("give the prompt: /inspector?prompt=TEXT");
  const std::u32string prompt = decode_prompt(req.get_param_value("prompt"));
  const auto m = model();
  refuse_past_context(prompt, *m);
  Inspection ins;
  try {
    std::lock_guard lock(compute_mutex_);
    ins = inspect(*m, prompt);
  } catch (const UnknownCharacterError& e) {  // the facts alone: the page takes the prompt as it is
    throw BadRequest(e.what());
  }
  HtmlOptions html;
  html.checkpoint = options_.checkpoint;
  html.unit = m->unit(false);
  html.title = "GlassLLM inspector: \"" + u32_to_utf8(prompt.substr(0, 60)) + "\"";
  try {  // a damaged log.csv: the page without its loss curve
    html.loss = read_save_loss_log(m->files_dir());
  } catch (const std::exception&) {}
  res.set_content(inspection_html(ins, html), "text/html; charset=utf-8");
}

}  // namespace glass
