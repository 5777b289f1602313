// The corruption probe: one small run is trained once, then each of more than 50 corrupted
// copies of its save (bit flips in the weights and in the AdamW moments, weights set to 1e30, a
// denormal or NaN, config.json edits to plausible values, truncated and missing files, manifest
// edits, files of another save, a tokenizer.json edit of a BPE run, ...) goes through every
// reader: sample, eval, inspect --json, export --format gguf, export --format llama2c, glass serve
// (GET /api/info) and train --resume. Each must either refuse with a message naming a file of
// the save (a non-zero exit, or an error status), or give output byte-identical to what the clean
// save gives. The counts (cases, handled, crashes, silent-wrong, refused without naming the file,
// data lost) are printed, and each but the first two must be 0.
//
// About a minute of CPU in the normal build; the sanitizer build (GLASS_SANITIZE) skips it, as
// its readers run under the sanitizers in the other tests of checkpoints.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "checkpoint/run_dir.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;
using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

namespace {

/// What one reader gave: its exit code, what it printed and the files it wrote (or, for
/// serve, the HTTP status and body of /api/info), and its standard error.
struct Outcome {
  int exit_code = 0;
  std::string output;
  std::string err;
};

/// One corrupted save: how it is made from a clean copy of the run (`save` is the directory
/// `current` points to, `run` the run directory), and the file names of the save a refusal may
/// name.
struct Variant {
  std::string name;
  bool bpe = false;
  std::vector<std::string> files;
  std::function<void(const fs::path& save, const fs::path& run)> corrupt;
};

const char* const kReaders[] = {"sample",         "eval",  "inspect --json", "export gguf",
                                "export llama2c", "serve", "train --resume"};

class CorruptionProbe : public ::testing::Test {
 protected:
  static fs::path dir_, text_;

  static CliRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 120 ");
  }
  static std::string recipe() {
    std::string flags = glass_test::tiny(0);
    const std::string two = " --eval-iters 2";
    flags.replace(flags.find(two), two.size(), " --eval-iters 1");
    return " --data " + q(text_.string()) + flags + " --threads 1";
  }
  static std::string files_in(const fs::path& dir) {
    std::vector<fs::path> paths;
    for (const auto& e : fs::recursive_directory_iterator(dir)) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());
    std::string all;
    for (const fs::path& p : paths)
      if (fs::is_regular_file(p) && p.filename() != "run.lock")  // holds the pid of its user
        all += fs::relative(p, dir).string() + "\n" + read_file(p) + "\n";
    return all;
  }

  /// Runs `reader` on the run directory `run`; `scratch` receives the files it writes.
  static Outcome read_with(const std::string& reader, const fs::path& run,
                           const fs::path& scratch) {
    fs::remove_all(scratch);
    fs::create_directories(scratch);
    const std::string m = " -m " + q(run.string());
    Outcome o;
    auto take = [&](const CliRun& r) {
      o.exit_code = r.exit_code;
      o.output = r.out;
      o.err = r.err;
    };
    if (reader == "sample") {
      take(glass("sample" + m + " --tokens 24 --temperature 0.8 --threads 1"));
    } else if (reader == "eval") {
      take(glass("eval" + m + " --data " + q(text_.string()) + " --threads 1"));
    } else if (reader == "inspect --json") {
      take(glass("inspect" + m + " -p " + q("a casa") + " --json - --threads 1"));
    } else if (reader == "export gguf") {
      take(glass("export" + m + " --format gguf --out " + q((scratch / "m.gguf").string())));
      o.output += files_in(scratch);
    } else if (reader == "export llama2c") {
      take(glass("export" + m + " --format llama2c --out " + q((scratch / "l2c").string())));
      o.output += files_in(scratch);
    } else if (reader == "serve") {
      // The server's own exit code when it refuses to start; else the status and body of
      // GET /api/info (bash's /dev/tcp), then SIGTERM.
      const fs::path out = scratch / "serve-out.txt", err = scratch / "serve-err.txt",
                     info = scratch / "info.txt";
      const std::string script =
          std::string(glass_test::binary_dir("/glass serve")) + m + " --port 0 --threads 1 >" +
          q(out.string()) + " 2>" + q(err.string()) +
          " & pid=$!; port=; for i in $(seq 1 1500); do port=$(grep -o '127.0.0.1:[0-9]*' " +
          q(out.string()) +
          " | cut -d: -f2); [ -n \"$port\" ] && break; kill -0 $pid 2>/dev/null || break; "
          "sleep 0.01; done; if [ -n \"$port\" ]; then exec 3<>/dev/tcp/127.0.0.1/$port; "
          "printf 'GET /api/info HTTP/1.1\\r\\nHost: 127.0.0.1:%s\\r\\nConnection: "
          "close\\r\\n\\r\\n' $port >&3; cat <&3 >" +
          q(info.string()) +
          "; kill -TERM $pid; wait $pid; echo served; else wait $pid; echo $?; fi";
      const int status = std::system(
          ("bash -c " + q(script) + " >" + q((scratch / "serve-rc.txt").string()) + " 2>/dev/null")
              .c_str());
      const std::string rc = read_file(scratch / "serve-rc.txt");
      o.err = read_file(err);
      if (status != 0 || rc.rfind("served", 0) != 0) {
        o.exit_code = rc.empty() ? -1 : std::atoi(rc.c_str());
        return o;
      }
      // The status line and the body; headers hold nothing of the model.
      const std::string reply = read_file(info);
      const std::size_t body = reply.find("\r\n\r\n");
      o.output = reply.substr(0, reply.find("\r\n")) +
                 (body == std::string::npos ? "" : "\n" + reply.substr(body + 4));
      // The name of the run directory is the same for every variant.
      if (o.output.rfind("HTTP/1.1 200", 0) != 0 ||
          o.output.find("\"loaded\":false") != std::string::npos)
        o.exit_code = 1;
    } else if (reader == "train --resume") {
      // One more step; the weights it saves must be the clean run's, bit for bit.
      take(glass("train --out " + q(run.string()) + recipe() +
                 " --resume --iters 5 --eval-every 5"));
      o.output.clear();
      if (o.exit_code == 0)
        o.output =
            read_file(fs::path(glass::checkpoint_files_dir(run.string())) / "model.safetensors");
    }
    return o;
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-corruption-probe");
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(6000));
  }
};

fs::path CorruptionProbe::dir_, CorruptionProbe::text_;

// ---- ways to corrupt a file of a save -----------------------------------------------------------

/// Replaces `file` by a new file (never writing through a hard link: best.safetensors is often
/// one of model.safetensors) holding what `edit` makes of its bytes.
void edit_file(const fs::path& file, const std::function<void(std::string&)>& edit) {
  std::string bytes = read_file(file);
  edit(bytes);
  fs::remove(file);
  write_file(file, bytes);
}

/// The offset of the first byte of a safetensors file's tensor data (after its 8-byte length and
/// its JSON header).
std::size_t data_start(const std::string& bytes) {
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return 8 + static_cast<std::size_t>(n);
}

/// Flips bit `bit` of the byte at `fraction` of the tensor data (0: first byte, 1: last).
auto flip_data(double fraction, int bit) {
  return [=](std::string& b) {
    const std::size_t start = data_start(b), n = b.size() - start;
    const std::size_t at = start + std::min(n - 1, static_cast<std::size_t>(fraction * n));
    b[at] = static_cast<char>(b[at] ^ (1 << bit));
  };
}

/// Sets the float32 at `fraction` of the tensor data to `value`.
auto set_float(double fraction, float value) {
  return [=](std::string& b) {
    const std::size_t start = data_start(b), n = (b.size() - start) / 4;
    const std::size_t at = start + 4 * std::min(n - 1, static_cast<std::size_t>(fraction * n));
    std::memcpy(&b[at], &value, 4);
  };
}

/// Edits the JSON of a file with `edit` and writes it back as glass writes it (dump(2)).
auto edit_json(const std::function<void(json&)>& edit, int indent = 2) {
  return [=](std::string& b) {
    json j = json::parse(b);
    edit(j);
    b = j.dump(indent) + "\n";
  };
}

std::vector<Variant> variants(const fs::path& older_save) {
  std::vector<Variant> v;
  auto in = [](const char* file, std::function<void(std::string&)> edit) {
    return [=](const fs::path& save, const fs::path&) { edit_file(save / file, edit); };
  };
  const std::vector<std::string> weights = {"model.safetensors"};
  for (double at : {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0})
    v.push_back({fmt::format("model.safetensors: bit flip at {:.0f}% of the data", 100 * at), false,
                 weights, in("model.safetensors", flip_data(at, at < 0.5 ? 0 : 6))});
  v.push_back({"model.safetensors: bit flip in the JSON header", false, weights,
               in("model.safetensors", [](std::string& b) { b[20] ^= 0x01; })});
  v.push_back({"model.safetensors: bit flip in the header length", false, weights,
               in("model.safetensors", [](std::string& b) { b[0] ^= 0x10; })});
  for (const auto& [what, value] :
       std::vector<std::pair<std::string, float>>{{"1e30", 1e30f},
                                                  {"a denormal", 1e-40f},
                                                  {"NaN", std::nanf("")},
                                                  {"+inf", std::numeric_limits<float>::infinity()},
                                                  {"0", 0.0f}})
    v.push_back({"model.safetensors: a weight set to " + what, false, weights,
                 in("model.safetensors", set_float(0.37, value))});
  v.push_back({"best.safetensors: bit flip",
               false,
               {"best.safetensors"},
               in("best.safetensors", flip_data(0.5, 3))});
  const std::vector<std::string> state = {"train_state.safetensors"};
  for (double at : {0.05, 0.5, 0.95})
    v.push_back(
        {fmt::format("train_state.safetensors (AdamW moments): bit flip at {:.0f}%", 100 * at),
         false, state, in("train_state.safetensors", flip_data(at, 2))});
  v.push_back({"train_state.safetensors: a moment set to NaN", false, state,
               in("train_state.safetensors", set_float(0.6, std::nanf("")))});
  const std::vector<std::string> ts = {"train_state.json"};
  v.push_back({"train_state.json: step 4 -> 3", false, ts,
               in("train_state.json", edit_json([](json& j) { j["step"] = 3; }))});
  v.push_back({"train_state.json: best_val edited", false, ts,
               in("train_state.json", edit_json([](json& j) { j["best_val"] = 1.0; }))});
  v.push_back({"train_state.json: reformatted", false, ts,
               in("train_state.json", edit_json([](json&) {}, 4))});
  const std::vector<std::string> config = {"config.json"};
  auto config_edit = [&](const std::string& what, std::function<void(json&)> edit) {
    v.push_back({"config.json: " + what, false, config, in("config.json", edit_json(edit))});
  };
  config_edit("rope_base 10000 -> 500000", [](json& j) { j["model"]["rope_base"] = 500000.0; });
  config_edit("norm_eps 1e-5 -> 0.1", [](json& j) { j["model"]["norm_eps"] = 0.1; });
  config_edit("training.context 16 -> 8", [](json& j) { j["training"]["context"] = 8; });
  config_edit("d_model 32 -> 64", [](json& j) { j["model"]["d_model"] = 64; });
  config_edit("n_heads 2 -> 4", [](json& j) { j["model"]["n_heads"] = 4; });
  config_edit("context_length 256 -> 128", [](json& j) { j["model"]["context_length"] = 128; });
  config_edit("init_std 0.02 -> 0.5", [](json& j) { j["model"]["init_std"] = 0.5; });
  config_edit("training.step 4 -> 3", [](json& j) { j["training"]["step"] = 3; });
  config_edit("training.run_id changed",
              [](json& j) { j["training"]["run_id"] = "0123456789abcdef"; });
  config_edit("reformatted", [](json&) {});
  auto truncate = [&](const char* file, double keep) {
    v.push_back({fmt::format("{} truncated to {:.0f}%", file, 100 * keep),
                 false,
                 {file},
                 in(file, [keep](std::string& b) {
                   b.resize(static_cast<std::size_t>(keep * b.size()));
                 })});
  };
  truncate("model.safetensors", 0.5);
  truncate("model.safetensors", 0.0);
  truncate("config.json", 0.5);
  truncate("manifest.json", 0.5);
  truncate("train_state.safetensors", 0.9);
  for (const char* file : {"model.safetensors", "config.json", "manifest.json", "train_state.json",
                           "train_state.safetensors", "best.safetensors", "log.csv", "steps.csv"})
    v.push_back({fmt::format("{} missing", file),
                 false,
                 {file},
                 [file](const fs::path& save, const fs::path&) { fs::remove(save / file); }});
  const std::vector<std::string> manifest = {"manifest.json"};
  auto manifest_edit = [&](const std::string& what, std::vector<std::string> named,
                           std::function<void(json&)> edit) {
    named.push_back("manifest.json");
    v.push_back({"manifest.json: " + what, false, named, in("manifest.json", edit_json(edit, 1))});
  };
  manifest_edit("step 4 -> 3", {}, [](json& j) { j["step"] = 3; });
  manifest_edit("run_id changed", {}, [](json& j) { j["run_id"] = "0123456789abcdef"; });
  manifest_edit("a digit of model.safetensors' SHA-256", {"model.safetensors"}, [](json& j) {
    std::string s = j["files"]["model.safetensors"]["sha256"];
    s[10] = s[10] == '0' ? '1' : '0';
    j["files"]["model.safetensors"]["sha256"] = s;
  });
  manifest_edit("config.json's size", {"config.json"},
                [](json& j) { j["files"]["config.json"]["bytes"] = 12; });
  manifest_edit("model.safetensors' entry removed", {"model.safetensors"},
                [](json& j) { j["files"].erase("model.safetensors"); });
  manifest_edit("an entry for a file that is not there", {"notes.txt"}, [](json& j) {
    j["files"]["notes.txt"] = {{"bytes", 3}, {"sha256", std::string(64, 'a')}};
  });
  manifest_edit("format changed", {}, [](json& j) { j["format"] = "something-else"; });
  auto from_older = [&](std::vector<std::string> files) {
    std::string what;
    for (const std::string& f : files) what += (what.empty() ? "" : " and ") + f;
    v.push_back({what + " from the save of step 2", false, files,
                 [=](const fs::path& save, const fs::path&) {
                   for (const std::string& f : files) {
                     fs::remove(save / f);
                     fs::copy_file(older_save / f, save / f);
                   }
                 }});
  };
  from_older({"model.safetensors"});
  from_older({"config.json"});
  from_older({"train_state.json", "train_state.safetensors"});
  from_older({"model.safetensors", "manifest.json"});
  v.push_back({"current -> a step directory that does not exist",
               false,
               {"current", "step-000009"},
               [](const fs::path&, const fs::path& run) {
                 fs::remove(run / "current");
                 fs::create_directory_symlink("step-000009", run / "current");
               }});
  const std::vector<std::string> tokenizer = {"tokenizer.json"};
  v.push_back({"BPE tokenizer.json: a merge changed", true, tokenizer,
               in("tokenizer.json", [](std::string& b) {
                 json j = json::parse(b);
                 auto& merges = j["model"]["merges"];
                 if (!merges.empty()) std::swap(merges[0], merges[merges.size() - 1]);
                 b = j.dump(2) + "\n";
               })});
  v.push_back({"BPE tokenizer.json: one byte changed", true, tokenizer,
               in("tokenizer.json", [](std::string& b) { b[b.size() / 2] ^= 0x01; })});
  v.push_back({"BPE tokenizer.json missing", true, tokenizer,
               [](const fs::path& save, const fs::path&) { fs::remove(save / "tokenizer.json"); }});
  return v;
}

}  // namespace

TEST_F(CorruptionProbe, EveryReaderRefusesEachCorruptedSaveByNameOrGivesTheCleanOutput) {
#ifdef GLASS_SANITIZE
  GTEST_SKIP() << "about a minute of CPU; the readers run under the sanitizers in the other tests";
#endif
  // The run: 2 steps, kept as `older`, then 2 more with --resume (saves at steps 2 and 4).
  const fs::path base = dir_ / "base", older = dir_ / "older", bpe = dir_ / "bpe";
  ASSERT_EQ(
      glass("train --out " + q(base.string()) + recipe() + " --iters 2 --eval-every 2").exit_code,
      0);
  ASSERT_EQ(std::system(("cp -a " + q(base.string()) + " " + q(older.string())).c_str()), 0);
  const CliRun resumed =
      glass("train --out " + q(base.string()) + recipe() + " --resume --iters 4 --eval-every 2");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const CliRun bpe_run = glass("train --out " + q(bpe.string()) + recipe() +
                               " --tokenizer bpe --vocab-size 340 --iters 4 --eval-every 2");
  ASSERT_EQ(bpe_run.exit_code, 0) << bpe_run.err;

  const fs::path run = dir_ / "run", scratch = dir_ / "scratch";
  auto fresh_copy = [&](const fs::path& from) {
    fs::remove_all(run);
    ASSERT_EQ(std::system(("cp -a " + q(from.string()) + " " + q(run.string())).c_str()), 0);
  };
  // What each reader gives on the clean saves (the same directory name as every variant).
  std::map<std::string, Outcome> clean, clean_bpe;
  for (const char* reader : kReaders) {
    fresh_copy(base);
    clean[reader] = read_with(reader, run, scratch);
    ASSERT_EQ(clean[reader].exit_code, 0) << reader << "\n" << clean[reader].err;
    fresh_copy(bpe);
    clean_bpe[reader] = read_with(reader, run, scratch);
  }

  EXPECT_EQ(clean["serve"].output.rfind("HTTP/1.1 200", 0), 0u) << clean["serve"].output;
  EXPECT_NE(clean["sample"].output, "");
  int cases = 0, handled = 0, refused = 0, crashes = 0, silent_wrong = 0, unnamed = 0, lost = 0;
  std::string report;
  // GLASS_PROBE_LIST=1 prints each case's outcome.
  const bool list_cases = std::getenv("GLASS_PROBE_LIST") != nullptr;
  const fs::path older_save = glass::checkpoint_files_dir(older.string());
  for (const Variant& variant : variants(older_save)) {
    for (const char* reader : kReaders) {
      fresh_copy(variant.bpe ? bpe : base);
      const fs::path save = glass::checkpoint_files_dir(run.string());
      variant.corrupt(save, run);
      const std::string before = files_in(run);
      const Outcome o = read_with(reader, run, scratch);
      const Outcome& want = (variant.bpe ? clean_bpe : clean)[reader];
      ++cases;
      const std::string where = variant.name + " | " + reader;
      const char* outcome = "";
      const bool named =
          std::any_of(variant.files.begin(), variant.files.end(), [&](const std::string& f) {
            return o.err.find(f) != std::string::npos || o.output.find(f) != std::string::npos;
          });
      if (o.exit_code < 0 || o.exit_code >= 124 ||
          o.err.find("terminate called") != std::string::npos) {
        ++crashes;
        report += fmt::format("\nCRASH {} (exit {}): {}", where, o.exit_code, o.err);
      } else if (o.exit_code == want.exit_code && o.output == want.output) {
        ++handled;  // the clean save's output, byte for byte
        outcome = "clean output";
      } else if (o.exit_code != 0 && named) {
        ++handled;  // refused, naming the file
        ++refused;
        outcome = "refused";
      } else if (o.exit_code != 0) {
        ++unnamed;
        report += fmt::format("\nREFUSED WITHOUT NAMING {} (exit {}): {}", where, o.exit_code,
                              o.err.substr(0, 400));
      } else {
        ++silent_wrong;
        report += fmt::format("\nSILENT-WRONG {}: exit 0 with another output", where);
      }
      if (list_cases) std::printf("case %s: %s\n", where.c_str(), outcome);
      // A reader, or a resume that was refused, leaves the save as it found it.
      if (o.exit_code != 0 || std::string(reader) != "train --resume")
        if (files_in(run) != before) {
          ++lost;
          report += fmt::format("\nDATA CHANGED {} (exit {})", where, o.exit_code);
        }
    }
  }
  std::printf(
      "corruption probe: %zu variants x %zu readers: %d cases, %d handled (%d refused naming a "
      "file, %d with the clean save's output), %d crashes, %d silent-wrong, %d refused without "
      "naming the file, %d data lost\n",
      variants(older_save).size(), std::size(kReaders), cases, handled, refused, handled - refused,
      crashes, silent_wrong, unnamed, lost);
  EXPECT_GE(variants(older_save).size(), 50u);
  EXPECT_EQ(handled, cases) << report;
  EXPECT_EQ(crashes, 0);
  EXPECT_EQ(silent_wrong, 0);
  EXPECT_EQ(unnamed, 0);
  EXPECT_EQ(lost, 0);
}
