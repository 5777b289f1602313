// A hostile-checkpoint matrix: well over 100 crafted saves, made here from two real runs (a
// character model and a BPE one, trained by the glass binary), each handed in-process to every
// reader of a save — load_checkpoint (current and best weights), sampling, the inspector,
// evaluation, verify_save, the recorded head scores and the loss log. Deep JSON in every JSON
// file, giant tokens and vocabularies, files swapped between the two runs, resealed manifests,
// truncated and absurd safetensors, NaN and negative fields: each reader must either work (the
// file is valid) or throw a std::exception whose message names the file or the save — never
// crash, never hang (each case is timed), never throw anything else.

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "cli_test_util.hpp"
#include "inspect/inspect.hpp"
#include "inspect/interp_report.hpp"
#include "inspect/loss_plot.hpp"
#include "sample/sampler.hpp"
#include "train/text_eval.hpp"

namespace fs = std::filesystem;
using glass_test::q;
using nlohmann::json;

namespace {

/// One crafted save: what to change in the save directory (`save`) of a copy of a run whose
/// other run is `other` (a save of the other kind, to swap files from), and whether to write
/// the manifest again afterwards (a resealed save: the checksums agree with the damage).
struct Case {
  std::string name;
  std::function<void(const fs::path& save, const fs::path& other)> damage;
  bool reseal = false;
};

std::string read(const fs::path& p) { return glass_test::read_file(p); }
void write(const fs::path& p, const std::string& s) { glass_test::write_file(p, s); }

/// `text` of a JSON object with `"zz": <value>` added before its last '}'.
std::string with_member(const std::string& text, const std::string& value) {
  const std::size_t end = text.rfind('}');
  return text.substr(0, end) + ",\"zz\":" + value + text.substr(end);
}

/// JSON file `file` parsed, changed by `edit`, written back.
void edit_json(const fs::path& file, const std::function<void(json&)>& edit) {
  json j = json::parse(read(file));
  edit(j);
  write(file, j.dump());
}

/// The safetensors header of `file` replaced by `header` (data left as it is).
void set_safetensors_header(const fs::path& file, const std::string& header) {
  const std::string bytes = read(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  std::string out(8, '\0');
  const std::uint64_t m = header.size();
  std::memcpy(out.data(), &m, 8);
  write(file, out + header + bytes.substr(8 + n));
}

/// The safetensors header of `file` as JSON.
json safetensors_header(const fs::path& file) {
  const std::string bytes = read(file);
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return json::parse(bytes.substr(8, n));
}

/// Every damage of a JSON file of the save: deep nesting (alone and inside a valid document),
/// truncation, emptiness, a duplicate key, a number out of range, text that is not JSON.
void json_cases(const std::string& file, std::vector<Case>& cases) {
  const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>> kinds =
      {{"deep arrays", [](const std::string&) { return std::string(200000, '['); }},
       {"deep objects",
        [](const std::string&) {
          std::string s;
          for (int i = 0; i < 100000; ++i) s += "{\"a\":";
          return s;
        }},
       {"deep value inside",
        [](const std::string& t) {
          return with_member(t, std::string(5000, '[') + std::string(5000, ']'));
        }},
       {"truncated", [](const std::string& t) { return t.substr(0, t.size() / 2); }},
       {"empty", [](const std::string&) { return std::string(); }},
       {"duplicate key",
        [](const std::string& t) { return "{\"zz\":1,\"zz\":2," + t.substr(t.find('{') + 1); }},
       {"number out of range", [](const std::string& t) { return with_member(t, "1e999"); }},
       {"not JSON", [](const std::string&) { return std::string("\x01\xff garbage NaN"); }}};
  for (const auto& [kind, make] : kinds)
    for (bool reseal : {false, true}) {
      if (reseal && file == glass::kManifestFile) continue;  // resealing rewrites it
      cases.push_back({file + ": " + kind + (reseal ? " (resealed)" : ""),
                       [file = file, make = make](const fs::path& save, const fs::path&) {
                         if (fs::exists(save / file)) write(save / file, make(read(save / file)));
                       },
                       reseal});
    }
}

/// Damages of a safetensors file: truncations, absurd header sizes, offsets, shapes and
/// dtypes, negative numbers, NaN values.
void safetensors_cases(const std::string& file, std::vector<Case>& cases) {
  auto add = [&](const std::string& kind, std::function<void(const fs::path&)> f) {
    for (bool reseal : {false, true})
      cases.push_back({file + ": " + kind + (reseal ? " (resealed)" : ""),
                       [file, f](const fs::path& save, const fs::path&) { f(save / file); },
                       reseal});
  };
  for (double frac : {0.0, 0.001, 0.5, 0.999})
    add("truncated to " + std::to_string(frac), [frac](const fs::path& p) {
      fs::resize_file(p, static_cast<std::uintmax_t>(static_cast<double>(fs::file_size(p)) * frac));
    });
  add("header length 2^63", [](const fs::path& p) {
    std::string b = read(p);
    const std::uint64_t n = std::uint64_t{1} << 63;
    std::memcpy(b.data(), &n, 8);
    write(p, b);
  });
  auto header_edit = [&](const std::string& kind, std::function<void(json&)> edit) {
    add(kind, [edit](const fs::path& p) {
      json h = safetensors_header(p);
      edit(h);
      set_safetensors_header(p, h.dump());
    });
  };
  auto first_tensor = [](json& h) -> json& {
    for (auto& [k, v] : h.items())
      if (k != "__metadata__") return v;
    return h;
  };
  header_edit("negative offsets",
              [&](json& h) { first_tensor(h)["data_offsets"] = json::parse("[-8, -4]"); });
  header_edit("offsets past the end",
              [&](json& h) { first_tensor(h)["data_offsets"] = json::parse("[0, 1e15]"); });
  header_edit("absurd shape",
              [&](json& h) { first_tensor(h)["shape"] = json::parse("[1000000000000, 1000000]"); });
  header_edit("negative shape",
              [&](json& h) { first_tensor(h)["shape"] = json::parse("[-1, 4]"); });
  header_edit("unknown dtype", [&](json& h) { first_tensor(h)["dtype"] = "F128"; });
  add("deep header",
      [](const fs::path& p) { set_safetensors_header(p, std::string(100000, '[')); });
  add("header of a duplicate key", [](const fs::path& p) {
    const json h = safetensors_header(p);
    const std::string t = h.dump();
    set_safetensors_header(p, "{\"__metadata__\":{},\"__metadata__\":{}," + t.substr(1));
  });
  add("NaN values", [](const fs::path& p) {
    std::string b = read(p);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(b.data() + b.size() - 4, &nan, 4);
    write(p, b);
  });
}

/// Damages of config.json's fields (each written back valid JSON, resealed).
void config_cases(std::vector<Case>& cases) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"vocab_size -1", [](json& j) { j["model"]["vocab_size"] = -1; }},
      {"vocab_size 0", [](json& j) { j["model"]["vocab_size"] = 0; }},
      {"vocab_size 1e12", [](json& j) { j["model"]["vocab_size"] = 1000000000000ULL; }},
      {"d_model 1e9", [](json& j) { j["model"]["d_model"] = 1000000000; }},
      {"n_layers 100000", [](json& j) { j["model"]["n_layers"] = 100000; }},
      {"n_heads 0", [](json& j) { j["model"]["n_heads"] = 0; }},
      {"n_kv_heads 3", [](json& j) { j["model"]["n_kv_heads"] = 3; }},
      {"context_length 1e12", [](json& j) { j["model"]["context_length"] = 1000000000000ULL; }},
      {"rope_base null", [](json& j) { j["model"]["rope_base"] = nullptr; }},
      {"rope_base -1", [](json& j) { j["model"]["rope_base"] = -1.0; }},
      {"norm_eps string", [](json& j) { j["model"]["norm_eps"] = "NaN"; }},
      {"training.step 999", [](json& j) { j["training"]["step"] = 999; }},
      {"training.context 1e9", [](json& j) { j["training"]["context"] = 1000000000; }},
      {"training.run_id of another run", [](json& j) { j["training"]["run_id"] = "other"; }},
      {"model is an array", [](json& j) { j["model"] = json::array(); }},
  };
  for (const auto& [kind, edit] : edits)
    cases.push_back({"config.json: " + kind,
                     [edit = edit](const fs::path& save, const fs::path&) {
                       edit_json(save / "config.json", edit);
                     },
                     true});
}

/// Damages of the manifest itself (never resealed: they are the seal).
void manifest_cases(std::vector<Case>& cases) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"negative size", [](json& j) { j["files"]["config.json"]["bytes"] = -1; }},
      {"huge size", [](json& j) { j["files"]["config.json"]["bytes"] = 1e300; }},
      {"short sha256", [](json& j) { j["files"]["config.json"]["sha256"] = "00"; }},
      {"a path outside", [](json& j) { j["files"]["../config.json"] = j["files"]["config.json"]; }},
      {"negative step", [](json& j) { j["step"] = -5; }},
      {"step of another save", [](json& j) { j["step"] = j["step"].get<long>() + 1; }},
      {"run id of another run", [](json& j) { j["run_id"] = "0123456789abcdef"; }},
      {"files is a list", [](json& j) { j["files"] = json::array(); }},
  };
  for (const auto& [kind, edit] : edits)
    cases.push_back({"manifest.json: " + kind,
                     [edit = edit](const fs::path& save, const fs::path&) {
                       edit_json(save / glass::kManifestFile, edit);
                     },
                     false});
}

/// The tokenizer.json damages of a BPE save: giant tokens, a huge vocabulary, bad merges.
void tokenizer_cases(std::vector<Case>& cases) {
  const std::vector<std::pair<std::string, std::function<void(json&)>>> edits = {
      {"a token of 17 characters",
       [](json& j) { j["model"]["vocab"][std::string(17, 'x')] = j["model"]["vocab"].size(); }},
      {"a token of 4 million characters",
       [](json& j) {
         j["model"]["vocab"][std::string(4000000, 'x')] = j["model"]["vocab"].size();
       }},
      {"a vocabulary of 300,000 tokens",
       [](json& j) {
         for (std::size_t id = j["model"]["vocab"].size(); id < 300000; ++id)
           j["model"]["vocab"][std::to_string(id)] = id;
       }},
      {"a merge of unknown tokens", [](json& j) { j["model"]["merges"][0] = "qq ww"; }},
      {"a negative id", [](json& j) { j["model"]["vocab"]["<unk>"] = -1; }},
      {"no merges", [](json& j) { j["model"].erase("merges"); }},
  };
  for (const auto& [kind, edit] : edits)
    for (bool reseal : {false, true})
      cases.push_back({"tokenizer.json: " + kind + (reseal ? " (resealed)" : ""),
                       [edit = edit](const fs::path& save, const fs::path&) {
                         if (fs::exists(save / "tokenizer.json"))
                           edit_json(save / "tokenizer.json", edit);
                       },
                       reseal});
}

/// Files of the other run's save copied over this one's, sealed or not.
void swap_cases(std::vector<Case>& cases) {
  for (const char* file :
       {"config.json", "model.safetensors", "best.safetensors", "tokenizer.json", "interp.json",
        "interp_history.json", "log.csv", "manifest.json", "train_state.json"})
    for (bool reseal : {false, true})
      cases.push_back(
          {std::string("swapped with the other run: ") + file + (reseal ? " (resealed)" : ""),
           [file](const fs::path& save, const fs::path& other) {
             if (!fs::exists(other / file)) return;
             fs::copy_file(other / file, save / file, fs::copy_options::overwrite_existing);
           },
           reseal && std::string(file) != glass::kManifestFile});
}

/// Damages of the records a reader shows beside the model: log.csv and interp.json.
void record_cases(std::vector<Case>& cases) {
  auto add = [&](const std::string& name, std::function<void(const fs::path&)> f, bool reseal) {
    cases.push_back({name, [f](const fs::path& s, const fs::path&) { f(s); }, reseal});
  };
  for (bool reseal : {false, true}) {
    const std::string r = reseal ? " (resealed)" : "";
    add(
        "log.csv: a changed loss" + r,
        [](const fs::path& s) {
          std::string t = read(s / "log.csv");
          t[t.size() - 3] = t[t.size() - 3] == '1' ? '2' : '1';
          write(s / "log.csv", t);
        },
        reseal);
    add(
        "log.csv: no header" + r, [](const fs::path& s) { write(s / "log.csv", "1,2,3\n"); },
        reseal);
    add(
        "log.csv: one line of 1 MB" + r,
        [](const fs::path& s) { write(s / "log.csv", std::string(1 << 20, '9')); }, reseal);
    add(
        "log.csv: NaN and negative steps" + r,
        [](const fs::path& s) {
          write(s / "log.csv",
                "step,lr,train_loss,val_loss,tokens_per_s,elapsed_s\n-5,nan,nan,inf,1,1\n");
        },
        reseal);
    add(
        "interp.json: impossible scores" + r,
        [](const fs::path& s) {
          edit_json(s / "interp.json", [](json& j) { j["induction"][0][0] = 1e308; });
        },
        reseal);
    add(
        "interp.json: 1000 x 1000 heads" + r,
        [](const fs::path& s) {
          edit_json(s / "interp.json", [](json& j) {
            const json row(std::vector<double>(1000, 0.5));
            const json table(std::vector<json>(1000, row));
            for (const char* k :
                 {"previous_token", "induction", "first_position", "ablation_delta_loss"})
              j[k] = table;
            j["n_layers"] = 1000;
            j["n_heads"] = 1000;
          });
        },
        reseal);
    add(
        "interp.json: a step after the save" + r,
        [](const fs::path& s) { edit_json(s / "interp.json", [](json& j) { j["step"] = 1e6; }); },
        reseal);
  }
}

/// Every case of the matrix.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const char* file : {"config.json", "manifest.json", "interp.json", "interp_history.json",
                           "train_state.json", "tokenizer.json"})
    json_cases(file, cases);
  for (const char* file : {"model.safetensors", "best.safetensors"}) safetensors_cases(file, cases);
  config_cases(cases);
  manifest_cases(cases);
  tokenizer_cases(cases);
  swap_cases(cases);
  record_cases(cases);
  return cases;
}

class HostileCheckpoints : public ::testing::Test {
 protected:
  static fs::path dir_;
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-hostile-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    glass_test::write_file(dir_ / "text.txt", glass_test::corpus_start(4000));
    const std::string recipe =
        " --batch-size 2 --context 16 --d-model 16 --n-layers 1 --n-heads 2 --n-kv-heads 1"
        " --ffn-hidden 16 --eval-iters 1 --sample-tokens 0 --warmup 2 --iters 4 --eval-every 2";
    for (const char* name : {"char", "bpe"}) {
      const std::string bpe = std::string(name) == "bpe" ? " --tokenizer bpe --vocab-size 400" : "";
      const glass_test::CliRun r =
          glass_test::run_glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                                    q((dir_ / name).string()) + recipe + bpe,
                                dir_);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
};

fs::path HostileCheckpoints::dir_;

/// The save `current` of `run` points to.
fs::path current_save(const fs::path& run) { return run / fs::read_symlink(run / "current"); }

/// Runs `reader`; returns "" when it worked, else the failure to report ("" too for a
/// std::exception whose message names the save: a clear refusal).
std::string refusal_fault(const std::string& reader, const fs::path& save,
                          const std::function<void()>& f) {
  try {
    f();
    return "";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    if (what.find(save.filename().string()) != std::string::npos) return "";
    return reader + " threw a message that names no file of the save: " + what;
  } catch (...) {
    return reader + " threw something that is not a std::exception";
  }
}

/// Hands the run `run` to every reader; returns the faults found.
std::vector<std::string> read_everywhere(const fs::path& run, const fs::path& text) {
  const fs::path save = current_save(run);
  std::vector<std::string> faults;
  auto check = [&](const std::string& reader, const std::function<void()>& f) {
    const std::string fault = refusal_fault(reader, save, f);
    if (!fault.empty()) faults.push_back(fault);
  };
  for (bool best : {false, true})
    check(best ? "load_checkpoint (best)" : "load_checkpoint", [&] {
      const glass::Checkpoint loaded = glass::load_checkpoint(run.string(), best);
      // A save that loads is used as a learner would: sample, inspect, evaluate.
      glass::SamplingOptions sampling;
      std::mt19937_64 rng(1);
      glass::generate(loaded.model(), {loaded.tokenizer().start_id()}, 4, loaded.window(), sampling,
                      rng);
      glass::inspect(loaded, U"o gato", glass::UnknownPolicy::kMapToUnknownId);
      glass::evaluate_text(loaded, text.string(), true);
      if (!best) glass::read_interp_history(run.string(), loaded.config());
    });
  check("verify_save", [&] { glass::verify_save(save.string()); });
  check("read_save_loss_log", [&] { glass::read_save_loss_log(save.string()); });
  return faults;
}

TEST_F(HostileCheckpoints, EveryCraftedSaveIsReadOrRefusedClearlyNeverACrashOrAHang) {
  const std::vector<Case> cases = all_cases();
  ASSERT_GE(cases.size(), 100u);
  // A short text to evaluate (the first 200 bytes of the training text).
  const fs::path text = dir_ / "short.txt";
  glass_test::write_file(text, glass_test::corpus_start(200));
  std::size_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* kind : {"char", "bpe"}) {
    const fs::path base = dir_ / kind;
    const fs::path other = current_save(dir_ / (std::string(kind) == "char" ? "bpe" : "char"));
    for (const Case& c : cases) {
      const fs::path run = dir_ / "case";
      fs::remove_all(run);
      fs::copy(base, run, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
      const fs::path save = current_save(run);
      c.damage(save, other);
      if (c.reseal) {
        const glass::Manifest m = glass::read_manifest(save.string());
        glass::write_manifest(save.string(), m.run_id, m.step);
      }
      const auto start = std::chrono::steady_clock::now();
      for (const std::string& fault : read_everywhere(run, text))
        ADD_FAILURE() << kind << " / " << c.name << ": " << fault;
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(seconds, 5.0) << kind << " / " << c.name << " took too long";
      ++n;
    }
  }
  EXPECT_GE(n, 200u);
  std::cout << n << " crafted saves in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
            << " s\n";
}

}  // namespace
