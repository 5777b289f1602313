// A run is never lost and never silently wrong, through the real binary: an existing run
// directory is refused without --resume/--overwrite; saves are all-or-nothing (a kill or a full
// disk at every file operation of a save, then --resume continues from the last complete save
// and ends with the same weights as a run that was never interrupted); one trainer per run
// directory; run ids tie a checkpoint's files together; SIGTERM and a Ctrl-C during an
// evaluation; writes to links, devices and a full stdout; non-finite logits; corrupted training
// state, tokenizer and headers; bounded counts and memory.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_test_util.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/model_size.hpp"
#include "checkpoint/run_dir.hpp"
#include "checkpoint/safetensors.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

class RunDirCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path text_;  // 6000 characters of Dom Casmurro
  static fs::path ckpt_;  // trained once: 30 steps, saves at 0, 15, 30
  static CliRun first_run_;

  static std::string model_flags() {
    return " --d-model 32 --n-layers 1 --n-heads 2 --n-kv-heads 1 --ffn-hidden 32 --warmup 5";
  }
  static std::string tiny() {
    return " --batch-size 4 --context 16 --eval-iters 2 --sample-tokens 10 --threads 1" +
           model_flags();
  }
  static std::string data() { return " --data " + q(text_.string()); }
  static CliRun glass(const std::string& args, const std::string& prefix = "") {
    return glass_test::run_glass(args, dir_, prefix);
  }
  static std::string bash(const std::string& script) { return "bash -c " + q(script); }

  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("glass-run-dir-cli-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    glass_test::remove_at_exit(dir_);
    text_ = dir_ / "text.txt";
    write_file(text_, glass_test::corpus_start(6000));
    ckpt_ = dir_ / "ckpt";
    first_run_ = glass("train" + data() + " --out " + q(ckpt_.string()) +
                       " --iters 30 --eval-every 15" + tiny());
  }

  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
  }

  /// A copy of a run directory as `cp -a` makes it (links stay links).
  static fs::path copy_run(const fs::path& from, const std::string& name) {
    const fs::path to = dir_ / name;
    fs::remove_all(to);
    EXPECT_EQ(std::system(("cp -a " + q(from.string()) + " " + q(to.string())).c_str()), 0);
    return to;
  }

  /// copy_run, then the copy's save made one written before saves carried a manifest (no
  /// manifest.json, and config.json does not mention one), so that the checks a changed file
  /// meets after the manifest's are reached (checkpoint/manifest.hpp refuses any change first).
  static fs::path copy_run_unverified(const fs::path& from, const std::string& name) {
    const fs::path to = copy_run(from, name);
    const fs::path save = glass::checkpoint_files_dir(to.string());
    fs::remove(save / "manifest.json");
    json config = json::parse(read_file(save / "config.json"));
    config["training"].erase("manifest");
    fs::remove(save / "config.json");
    write_file(save / "config.json", config.dump(2));
    return to;
  }

  /// The directory of the last complete save of a run directory.
  static fs::path files_of(const fs::path& run) {
    return glass::checkpoint_files_dir(run.string());
  }

  /// Tensor name -> values of a safetensors file (metadata ignored: run ids differ between runs).
  static std::map<std::string, std::vector<float>> tensors(const fs::path& file) {
    std::map<std::string, std::vector<float>> out;
    for (const auto& t : glass::load_safetensors(file.string()).tensors) out[t.name] = t.data;
    return out;
  }
};

fs::path RunDirCli::dir_, RunDirCli::text_, RunDirCli::ckpt_;
CliRun RunDirCli::first_run_;

}  // namespace

// ---- the run directory ------------------------------------------------------------------------

TEST_F(RunDirCli, ARunDirectoryHoldsOneCompleteSaveLinkedAsCurrent) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  ASSERT_TRUE(fs::is_symlink(ckpt_ / "current"));
  EXPECT_EQ(fs::read_symlink(ckpt_ / "current").string(), "step-000030");
  std::size_t step_dirs = 0;
  for (const auto& e : fs::directory_iterator(ckpt_))
    if (e.path().filename().string().rfind("step-", 0) == 0) ++step_dirs;
  EXPECT_EQ(step_dirs, 1u) << "the previous saves are removed once the new one is current";
  for (const std::string& f : glass::checkpoint_file_names()) {
    EXPECT_TRUE(fs::is_symlink(ckpt_ / f)) << f;
    EXPECT_EQ(fs::read_symlink(ckpt_ / f).string(), "current/" + f);
    EXPECT_TRUE(fs::is_regular_file(ckpt_ / "step-000030" / f)) << f;
  }
  EXPECT_TRUE(fs::is_regular_file(ckpt_ / "loss.html"));
  EXPECT_TRUE(fs::exists(ckpt_ / "run.lock"));
  // One run id in every file of the save.
  const json config = json::parse(read_file(ckpt_ / "config.json"));
  const std::string run_id = config["training"]["run_id"].get<std::string>();
  EXPECT_EQ(run_id.size(), 16u);
  EXPECT_EQ(json::parse(read_file(ckpt_ / "train_state.json"))["run_id"], run_id);
  for (const char* f : {"model.safetensors", "best.safetensors", "train_state.safetensors"})
    EXPECT_EQ(glass::load_safetensors((ckpt_ / f).string()).metadata.at("run_id"), run_id) << f;
  // The readers take the run directory or the step directory alike.
  EXPECT_EQ(glass::load_checkpoint(ckpt_.string()).weights_step(), "30");
  EXPECT_EQ(glass::load_checkpoint((ckpt_ / "step-000030").string()).weights_step(), "30");
}

TEST_F(RunDirCli, ReadersOfARunWhoseCurrentLinkIsLostReadItsNewestCompleteSave) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  const fs::path run = dir_ / "lost-link";
  fs::copy(ckpt_, run, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove(run / "run.lock");
  fs::remove(run / "current");
  const glass::Checkpoint missing = glass::load_checkpoint(run.string());
  EXPECT_EQ(missing.weights_step(), "30");
  EXPECT_NE(missing.warning().find("current (the link to the last complete save) is missing: "
                                   "reading the newest complete save, step-000030"),
            std::string::npos)
      << missing.warning();
  fs::create_directory_symlink("step-000099", run / "current");  // a save that is gone
  const CliRun sampled = glass("sample -m " + q(run.string()) + " -n 5 --seed 1");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  EXPECT_NE(sampled.err.find("points to step-000099, which is gone: reading the newest complete "
                             "save, step-000030"),
            std::string::npos)
      << sampled.err;
  EXPECT_EQ(fs::read_symlink(run / "current").string(), "step-000099") << "a reader never relinks";
  // `current` leads to a save that did not complete (its manifest, written last, missing), or
  // to a file: the same fallback.
  fs::copy(run / "step-000030", run / "step-000040");
  fs::remove(run / "step-000040" / "manifest.json");
  fs::remove(run / "current");
  fs::create_directory_symlink("step-000040", run / "current");
  const glass::Checkpoint incomplete = glass::load_checkpoint(run.string());
  EXPECT_EQ(incomplete.weights_step(), "30");
  EXPECT_NE(incomplete.warning().find("points to step-000040, a save that did not complete: "
                                      "reading the newest complete save, step-000030"),
            std::string::npos)
      << incomplete.warning();
  fs::remove(run / "current");
  fs::create_symlink("step-000030/config.json", run / "current");
  const CliRun to_file = glass("sample -m " + q(run.string()) + " -n 5 --seed 1");
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_NE(to_file.err.find("points to step-000030/config.json, which is a file, not a save: "
                             "reading the newest complete save, step-000030"),
            std::string::npos)
      << to_file.err;
}

TEST_F(RunDirCli, FoldersOfTheUserNamedLikeSavesAreNeverRemoved) {
  // --out may already hold the user's own folders. Only directories that begin_save could have
  // made (step-NNNNNN holding nothing but checkpoint files) are taken for saves and removed.
  const fs::path out = dir_ / "user-folders";
  fs::create_directories(out / "step-by-step");
  write_file(out / "step-by-step" / "notes.txt", "mine");
  fs::create_directories(out / "step-000001");
  write_file(out / "step-000001" / "draft.txt", "mine too");
  const CliRun r =
      glass("train" + data() + " --out " + q(out.string()) + " --iters 2 --eval-every 1" + tiny());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_file(out / "step-by-step" / "notes.txt"), "mine");
  EXPECT_EQ(read_file(out / "step-000001" / "draft.txt"), "mine too");
  EXPECT_EQ(fs::read_symlink(out / "current").string(), "step-000002");
  EXPECT_FALSE(fs::exists(out / "step-000001.1"))
      << "the save of step 1 went beside the user's folder "
         "and was removed once step 2 was current";
}

TEST_F(RunDirCli, CompleteSavesAreNeverRemovedUnlessTheyAreReplaced) {
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  // A complete save without its `current` link (a run copied to a file system without links):
  // a new run there keeps it, even when it saves the same step.
  const fs::path unlinked = dir_ / "unlinked";
  fs::create_directories(unlinked);
  fs::copy(ckpt_ / "step-000030", unlinked / "step-000030");
  const CliRun beside = glass("train" + data() + " --out " + q(unlinked.string()) +
                              " --iters 30 --eval-every 30" + tiny());
  ASSERT_EQ(beside.exit_code, 0) << beside.out << beside.err;
  EXPECT_EQ(glass::load_checkpoint((unlinked / "step-000030").string()).run_id(),
            glass::load_checkpoint(ckpt_.string()).run_id())
      << "the copied save was replaced";
  EXPECT_EQ(fs::read_symlink(unlinked / "current").string(), "step-000030.1");
  // Copies of a save that the user keeps inside the run directory survive a resumed run's saves;
  // only the save each new one replaces is removed.
  const fs::path run = dir_ / "with-copies";
  fs::copy(ckpt_, run, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::copy(run / "step-000030", run / "step-000999");
  const CliRun resumed = glass("train" + data() + " --out " + q(run.string()) +
                               " --resume --iters 34 --eval-every 2" + tiny());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_TRUE(fs::exists(run / "step-000999" / "model.safetensors"));
  EXPECT_FALSE(fs::exists(run / "step-000030")) << "replaced by the save of step 32";
  EXPECT_FALSE(fs::exists(run / "step-000032")) << "replaced by the save of step 34";
  EXPECT_EQ(fs::read_symlink(run / "current").string(), "step-000034");
  // A `current` that is a directory (copied with cp -L) is refused before any training, not at
  // the first save.
  const fs::path dereferenced = dir_ / "dereferenced";
  fs::copy(ckpt_, dereferenced, fs::copy_options::recursive);
  ASSERT_TRUE(fs::is_directory(dereferenced / "current") &&
              !fs::is_symlink(dereferenced / "current"));
  const CliRun deref = glass("train" + data() + " --out " + q(dereferenced.string()) +
                             " --resume --iters 34" + tiny());
  expect_error(deref, "is not a symbolic link");
  EXPECT_EQ(deref.out.find("step 31"), std::string::npos) << deref.out;
}

TEST_F(RunDirCli, ACheckpointWrittenBeforeRunIdsResumesAndItsBestWeightsStayReadable) {
  // A flat checkpoint as written before run ids existed: the files of one save, side by side,
  // with no run id in any of them.
  ASSERT_EQ(first_run_.exit_code, 0) << first_run_.out << first_run_.err;
  const fs::path old = dir_ / "before-run-ids";
  fs::create_directories(old);
  for (const std::string& f : glass::checkpoint_file_names())
    fs::copy_file(ckpt_ / "step-000030" / f, old / f);
  for (const char* f : {"model.safetensors", "best.safetensors", "train_state.safetensors"}) {
    glass::SafetensorsContents c = glass::load_safetensors((old / f).string());
    c.metadata.erase("run_id");
    glass::save_safetensors((old / f).string(), c.tensors, c.metadata);
  }
  json config = json::parse(read_file(old / "config.json"));
  config["training"].erase("run_id");
  config["training"].erase("manifest");  // nor manifests
  write_file(old / "config.json", config.dump());
  json state = json::parse(read_file(old / "train_state.json"));
  state.erase("run_id");
  state.erase("recipe");  // recorded since; a checkpoint this old has none
  write_file(old / "train_state.json", state.dump());
  // The resumed run gets a new id; the best weights it carries over (whether or not its one
  // evaluation improves on them) must carry it too, or --best would be refused as another run's.
  const CliRun r = glass("train" + data() + " --out " + q(old.string()) +
                         " --resume --iters 31 --eval-every 1 --lr 1e-9 --min-lr 1e-9" + tiny());
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* command : {"sample", "eval"}) {
    std::string args = std::string(command) + " --checkpoint " + q(old.string()) + " --best";
    args += std::string(command) == "sample" ? " --tokens 5 --prompt a" : data();
    const CliRun best = glass(args);
    EXPECT_EQ(best.exit_code, 0) << command << ": " << best.out << best.err;
  }
}

TEST_F(RunDirCli, RerunningIntoAnExistingRunIsRefusedUnlessOverwriteOrResume) {
  const fs::path run = dir_ / "rerun";
  const std::string args =
      "train" + data() + " --out " + q(run.string()) + " --iters 4 --eval-every 2" + tiny();
  ASSERT_EQ(glass(args).exit_code, 0);
  const std::string model = read_file(run / "model.safetensors");
  const CliRun again = glass(args);
  expect_error(again, "already holds a training run");
  for (const char* hint : {"--resume", "--overwrite", "--out"})
    EXPECT_NE(again.err.find(hint), std::string::npos) << hint << " missing in: " << again.err;
  EXPECT_EQ(read_file(run / "model.safetensors"), model) << "the earlier run was touched";
  expect_error(glass(args + " --resume --overwrite"), "contradict");
  // --overwrite: a new run (new run id) replaces the old one.
  const std::string old_id = json::parse(read_file(run / "config.json"))["training"]["run_id"];
  const CliRun over = glass(args + " --overwrite --seed 7");
  ASSERT_EQ(over.exit_code, 0) << over.err;
  EXPECT_NE(over.out.find("--overwrite"), std::string::npos) << over.out;
  EXPECT_NE(json::parse(read_file(run / "config.json"))["training"]["run_id"], old_id);
  EXPECT_NE(read_file(run / "model.safetensors"), model);
  // A directory holding only the remains of a save that never completed holds no run.
  const fs::path remains = dir_ / "remains";
  fs::create_directories(remains / "step-000000");
  write_file(remains / "step-000000" / "model.safetensors", "half");
  const CliRun fresh = glass("train" + data() + " --out " + q(remains.string()) +
                             " --iters 2 --eval-every 2" + tiny());
  EXPECT_EQ(fresh.exit_code, 0) << fresh.err;
  EXPECT_NE(fresh.out.find("removed 1 incomplete save"), std::string::npos) << fresh.out;
}

// ---- all-or-nothing saves: a kill or a full disk at every file operation -----------------------

TEST_F(RunDirCli, AKillOrAFullDiskAtAnyFileOperationOfASaveLosesNothing) {
  // The reference: 4 steps, saves at 0, 2 and 4; GLASS_FAULT_TRACE lists every file operation,
  // among them the switch of `current` that completes each save.
  const std::string recipe = data() + " --iters 4 --eval-every 2" + tiny();
  const fs::path ref = dir_ / "fault-ref";
  const CliRun reference = glass("train --out " + q(ref.string()) + recipe, "GLASS_FAULT_TRACE=1 ");
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  std::map<long, long> switch_op_to_step;  // file op number of each switch -> the step it completes
  long first_manifest_op =
      -1;  // the rename that completes the first save's files, before its switch
  std::vector<std::string> op_kinds;  // op n - 1 -> its verb and file, step and temp suffix aside
  long total_ops = 0;
  {
    std::istringstream lines(reference.err);
    std::string line;
    const std::regex op(R"(^file op (\d+): (\S+) (.*)$)"), step(R"(step-(\d+))"),
        numbers(R"(step-\d+|\.tmp\.\d+(\.\d+)?)");
    std::smatch m, s;
    while (std::getline(lines, line)) {
      if (!std::regex_match(line, m, op)) continue;
      total_ops = std::max(total_ops, std::stol(m[1]));
      const std::string path = m[3];
      if (m[2] == "switch" && std::regex_search(path, s, step))
        switch_op_to_step[std::stol(m[1])] = std::stol(s[1]);
      if (m[2] == "rename" && first_manifest_op < 0 &&
          path.find("/manifest.json") != std::string::npos)
        first_manifest_op = std::stol(m[1]);
      op_kinds.resize(static_cast<std::size_t>(total_ops));
      op_kinds[static_cast<std::size_t>(std::stol(m[1]) - 1)] =
          m[2].str() + " " + std::regex_replace(path, numbers, "#");
    }
  }
  ASSERT_EQ(switch_op_to_step.size(), 3u) << reference.err;
  ASSERT_GT(first_manifest_op, 0) << reference.err;
  ASSERT_GT(total_ops, 20);
  ASSERT_EQ(op_kinds.size(), static_cast<std::size_t>(total_ops));

  // The file operations to fault. The normal build faults every one. Under AddressSanitizer
  // (scripts/sanitize.sh) every run is several times slower and the sweep was the suite's
  // longest test (~250 s): there each kind of operation on each file (the verb and the file,
  // step directory and temporary suffix aside) is faulted once, at its first occurrence, plus
  // the operations next to each switch of `current` (46 of 86 operations); the later saves
  // repeat the first one's operations through the same code. GLASS_TEST_FULL_FAULT_SWEEP=1
  // (or 0) asks for every operation (or the sample) in any build.
#if defined(GLASS_SANITIZE)
  bool full_sweep = false;
#else
  bool full_sweep = true;
#endif
  if (const char* full = std::getenv("GLASS_TEST_FULL_FAULT_SWEEP"))
    full_sweep = std::string(full) != "0";
  auto faulted = [&, seen = std::set<std::string>()](long n) mutable {  // n: 1..total_ops
    const bool first = seen.insert(op_kinds[static_cast<std::size_t>(n - 1)]).second;
    bool near_switch = false;
    for (const auto& entry : switch_op_to_step)
      near_switch = near_switch || std::abs(entry.first - n) <= 1;
    return full_sweep || first || near_switch;
  };
  std::vector<long> sampled;  // op numbers, ascending
  for (long n = 1; n <= total_ops; ++n)
    if (faulted(n)) sampled.push_back(n);
  if (!full_sweep)
    std::cout << "faulting " << sampled.size() << " of " << total_ops << " file operations\n";
  const auto final_weights = tensors(ref / "model.safetensors");

  // After the fault: --resume continues from the last complete save (or, with none, the
  // directory is still free for a new run) and ends with the reference's weights.
  auto check_recovery = [&](const fs::path& run, long last_complete, const std::string& what) {
    SCOPED_TRACE(what + ", last complete save: step " + std::to_string(last_complete));
    if (last_complete < 0) {
      expect_error(glass("train --out " + q(run.string()) + recipe + " --resume"),
                   "run without --resume first");
      const CliRun again = glass("train --out " + q(run.string()) + recipe);
      ASSERT_EQ(again.exit_code, 0) << again.err;
    } else {
      EXPECT_EQ(glass::load_checkpoint(run.string()).weights_step(), std::to_string(last_complete));
      const CliRun resumed = glass("train --out " + q(run.string()) + recipe + " --resume");
      if (last_complete == 4) {
        expect_error(resumed, "already at step 4");
      } else {
        ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
        EXPECT_NE(resumed.out.find("resuming from step " + std::to_string(last_complete)),
                  std::string::npos)
            << resumed.out;
      }
    }
    EXPECT_EQ(tensors(run / "model.safetensors"), final_weights);
  };
  auto last_switch_before = [&](long ops_done) {
    long step = -1;
    for (const auto& [op, s] : switch_op_to_step)
      if (op <= ops_done) step = s;
    return step;
  };

  for (const long n : sampled) {  // killed after exactly k file operations, before op n
    const long k = n - 1;
    const fs::path run = dir_ / "fault-kill";
    fs::remove_all(run);
    const CliRun killed = glass("train --out " + q(run.string()) + recipe,
                                "GLASS_FAULT_AFTER_FILE_OPS=" + std::to_string(k) + " ");
    // SIGKILL: -1 when the shell exec'ed glass, 128 + 9 when the shell reports its child's death.
    ASSERT_TRUE(killed.exit_code == -1 || killed.exit_code == 137)
        << "k=" << k << " was not killed (exit " << killed.exit_code << "): " << killed.err;
    if (last_switch_before(k) < 0 && k >= first_manifest_op) {
      // The first save is complete but its switch never happened: --resume finds it and says so.
      SCOPED_TRACE("kill -9 after " + std::to_string(k) + " file ops, before the first switch");
      const CliRun resumed = glass("train --out " + q(run.string()) + recipe + " --resume");
      ASSERT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
      EXPECT_NE(resumed.out.find("resuming from the newest complete save, step-000000"),
                std::string::npos)
          << resumed.out;
      EXPECT_EQ(tensors(run / "model.safetensors"), final_weights);
      if (HasFailure()) return;
      continue;
    }
    check_recovery(run, last_switch_before(k), "kill -9 after " + std::to_string(k) + " file ops");
    if (HasFailure()) return;
  }
  for (const long k : sampled) {  // file operation k fails with ENOSPC
    const fs::path run = dir_ / "fault-full";
    fs::remove_all(run);
    const CliRun full = glass("train --out " + q(run.string()) + recipe,
                              "GLASS_FAULT_FAIL_FILE_OP=" + std::to_string(k) + " ");
    const long last = last_switch_before(k - 1);
    SCOPED_TRACE("disk full at file op " + std::to_string(k));
    if (full.exit_code == 0) {
      // Only the tidying after a complete save may fail without stopping the run.
      EXPECT_NE(full.out.find("warning:"), std::string::npos) << full.out;
    } else {
      EXPECT_EQ(full.exit_code, 1) << full.err;
      EXPECT_NE(full.err.find("No space left on device"), std::string::npos) << full.err;
      EXPECT_EQ(full.err.find("Ctrl-C"), std::string::npos) << full.err;
      if (last >= 0 && full.err.find("saving the checkpoint") != std::string::npos) {
        EXPECT_NE(full.err.find("(step " + std::to_string(last) + ") is kept"), std::string::npos)
            << full.err;
      }
    }
    check_recovery(run, full.exit_code == 0 ? 4 : last, "ENOSPC at file op " + std::to_string(k));
    if (HasFailure()) return;
  }
}

// ---- one trainer per run directory; SIGTERM; Ctrl-C during an evaluation ----------------------

TEST_F(RunDirCli, ASecondTrainerIsRefusedNamingTheFirstAndSigtermSavesAndExits) {
  const fs::path run = dir_ / "locked";
  const fs::path out1 = dir_ / "lock-out1.txt", out2 = dir_ / "lock-out2.txt",
                 out3 = dir_ / "lock-out3.txt";
  const std::string glass_bin = glass_test::binary_dir("/glass");
  const std::string train = glass_bin + " train" + data() + " --out " + q(run.string()) + tiny();
  const std::string script = train + " --iters 100000 --eval-every 100000 >" + q(out1.string()) +
                             " 2>&1 & pid=$!; " + "for i in $(seq 1 600); do [ -e " +
                             q((run / "log.csv").string()) + " ] && break; sleep 0.05; done; " +
                             "sleep 0.2; " + train + " --iters 100000 --resume >" +
                             q(out2.string()) + " 2>&1; echo $? >>" + q(out2.string()) + "; " +
                             train + " --iters 100000 >" + q(out3.string()) + " 2>&1; echo $? >>" +
                             q(out3.string()) + "; " + "echo pid $pid >>" + q(out2.string()) +
                             "; kill -TERM $pid; wait $pid; echo exit $? >>" + q(out1.string());
  ASSERT_EQ(std::system(bash(script).c_str()), 0);
  const std::string first = read_file(out1), second = read_file(out2), third = read_file(out3);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(second, m, std::regex(R"(pid (\d+)\n$)"))) << second;
  const std::string pid = m[1];
  for (const std::string& other : {second, third}) {
    EXPECT_NE(other.find("another glass train (pid " + pid + ") is using"), std::string::npos)
        << other;
    EXPECT_EQ(other.find("\n0\n"), std::string::npos) << "the second trainer ran: " << other;
  }
  // SIGTERM (timeout, docker stop, SLURM) is handled like Ctrl-C: save, exit 128 + 15.
  EXPECT_NE(first.find("(SIGTERM): saving a checkpoint"), std::string::npos) << first;
  EXPECT_NE(first.find("exit 143"), std::string::npos) << first;
  ASSERT_TRUE(std::regex_search(first, m, std::regex(R"(interrupted at step (\d+))"))) << first;
  const long stopped = std::stol(m[1]);
  EXPECT_EQ(glass::load_checkpoint(run.string()).weights_step(), std::to_string(stopped));
  const CliRun resumed = glass("train" + data() + " --out " + q(run.string()) + tiny() +
                               " --resume --iters " + std::to_string(stopped + 1));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resuming from step " + std::to_string(stopped)), std::string::npos);
}

TEST_F(RunDirCli, CtrlCDuringAnEvaluationIsHonouredWhenItEnds) {
  // A long first evaluation (3000 batches per split: seconds); Ctrl-C arrives during it.
  const fs::path run = dir_ / "eval-interrupted", out = dir_ / "eval-int-out.txt";
  const std::string script =
      std::string(glass_test::binary_dir("/glass train")) + data() + " --out " + q(run.string()) +
      " --iters 10 --eval-every 5 --eval-iters 3000 --batch-size 16 --context 16 --sample-tokens 10 --threads 1" +
      model_flags() + " >" + q(out.string()) + " 2>&1 & pid=$!; " +
      "for i in $(seq 1 600); do grep -q '^recipe:' " + q(out.string()) +
      " && break; sleep 0.05; done; " + "sleep 0.3; kill -INT $pid; wait $pid; echo exit $? >>" +
      q(out.string());
  ASSERT_EQ(std::system(bash(script).c_str()), 0);
  const std::string text = read_file(out);
  EXPECT_NE(text.find("Ctrl-C (SIGINT) arrived during the evaluation at step 0; the evaluation was "
                      "finished first"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("step 0: train loss"), std::string::npos) << text;
  EXPECT_EQ(text.find("---- sample"), std::string::npos) << text;  // no sample after the stop
  EXPECT_NE(text.find("exit 130"), std::string::npos) << text;
  EXPECT_NE(read_file(run / "log.csv").find("\n0,"),
            std::string::npos);  // the evaluation was saved
}

// ---- writes: links, devices, a full stdout ----------------------------------------------------

TEST_F(RunDirCli, OutputFilesNeverReplaceLinksOrDevicesAndAFullStdoutFails) {
  const std::string ck = " --checkpoint " + q(ckpt_.string()) + " --prompt 'Capitu'";
  const fs::path target = dir_ / "page-target.html", link = dir_ / "page-link.html";
  write_file(target, "old");
  fs::remove(link);
  fs::create_symlink(target, link);
  const CliRun via_link = glass("inspect" + ck + " --html " + q(link.string()));
  ASSERT_EQ(via_link.exit_code, 0) << via_link.err;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_NE(read_file(target).find("<html"), std::string::npos);
  const fs::path dangling = dir_ / "dangling.json";
  fs::remove(dangling);
  fs::create_symlink(dir_ / "no-such-dir" / "x.json", dangling);
  expect_error(glass("inspect" + ck + " --json " + q(dangling.string())), "symbolic link");
  const CliRun to_null = glass("inspect" + ck + " --json /dev/null --html /dev/null");
  EXPECT_EQ(to_null.exit_code, 0) << to_null.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  expect_error(glass("inspect" + ck + " --html /dev/full"), "No space left on device");
  // stdout on a full disk: an error, not exit 0.
  const fs::path err = dir_ / "full-stdout.txt";
  for (const std::string& cmd :
       {"sample --checkpoint " + q(ckpt_.string()) + " --tokens 20",
        "eval --checkpoint " + q(ckpt_.string()) + data(), "inspect" + ck}) {
    const int status = std::system(
        (glass_test::binary_dir("/glass ") + cmd + " >/dev/full 2>" + q(err.string())).c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << cmd;
    EXPECT_NE(read_file(err).find("cannot write to standard output"), std::string::npos)
        << cmd << ": " << read_file(err);
  }
}

// ---- non-finite logits ------------------------------------------------------------------------

TEST_F(RunDirCli, EveryCommandRefusesNonFiniteLogits) {
  // Finite weights whose logits overflow: the final norm's gains at 1e30 and the LM head at 3e38
  // (both load fine: only NaN and inf in a file are refused as corrupt).
  const fs::path run = copy_run_unverified(ckpt_, "huge");
  const fs::path weights = files_of(run) / "model.safetensors";
  glass::SafetensorsContents c = glass::load_safetensors(weights.string());
  for (auto& t : c.tensors) {
    if (t.name == "norm.weight") std::fill(t.data.begin(), t.data.end(), 1e30f);
    if (t.name == "output.weight") std::fill(t.data.begin(), t.data.end(), 3e38f);
  }
  glass::save_safetensors(weights.string(), c.tensors, c.metadata);
  const std::string ck = " --checkpoint " + q(run.string());
  expect_error(glass("sample" + ck + " --tokens 5"), "not finite");
  expect_error(glass("eval" + ck + data()), "not finite");
  expect_error(glass("inspect" + ck + " --prompt 'Capitu'"), "not finite");
  const CliRun train = glass("train" + data() + " --out " + q(run.string()) + tiny() +
                             " --resume --iters 40 --eval-every 5");
  expect_error(train, "became");
  EXPECT_EQ(train.err.find("-nan"), std::string::npos) << train.err;

  // NaN inside the weights (wq): refused when the file is read.
  const fs::path nan_run = copy_run_unverified(ckpt_, "nan");
  const fs::path nan_weights = files_of(nan_run) / "model.safetensors";
  c = glass::load_safetensors(nan_weights.string());
  for (auto& t : c.tensors)
    if (t.name == "layers.0.attention.wq.weight")
      std::fill(t.data.begin(), t.data.end(), std::nanf(""));
  glass::save_safetensors(nan_weights.string(), c.tensors, c.metadata);
  const std::string nk = " --checkpoint " + q(nan_run.string());
  expect_error(glass("sample" + nk + " --tokens 5"), "non-finite value (NaN)");
  expect_error(glass("eval" + nk + data()), "non-finite value (NaN)");
  expect_error(glass("inspect" + nk + " --prompt 'Capitu'"), "non-finite value (NaN)");
}

// ---- corrupted or mixed checkpoints -----------------------------------------------------------

TEST_F(RunDirCli, ResumeRefusesACorruptedTrainingState) {
  const std::string resume = tiny() + data() + " --resume --iters 40";
  auto with_state = [&](const std::string& name, const std::function<void(json&)>& edit) {
    const fs::path run = copy_run_unverified(ckpt_, name);
    const fs::path state = files_of(run) / "train_state.json";
    json j = json::parse(read_file(state));
    edit(j);
    write_file(state, j.dump(1));
    return run;
  };
  auto resume_in = [&](const fs::path& run, const std::string& extra = "") {
    return glass("train --out " + q(run.string()) + resume + extra);
  };
  expect_error(resume_in(with_state("no-adamw", [](json& j) { j.erase("adamw"); })),
               "missing the \"adamw\" block");
  expect_error(resume_in(with_state("beta1", [](json& j) { j["adamw"]["beta1"] = 1.5; })),
               "adamw.beta1 = 1.5 is out of range");
  expect_error(resume_in(with_state("eps", [](json& j) { j["adamw"]["eps"] = "x"; })),
               "adamw.eps must be a number");
  expect_error(resume_in(with_state("beta2", [](json& j) { j["adamw"]["beta2"] = 0.95; })),
               "beta2 = 0.95");
  // A weight decay that differs from the one given now: say which flag restores it.
  expect_error(resume_in(copy_run_unverified(ckpt_, "wd"), " --weight-decay 0.2"),
               "pass --weight-decay 0.1");
  expect_error(resume_in(with_state("best", [](json& j) { j["best_val"] = 0.001; })),
               "best_val is 0.001 but the smallest val_loss in the log is");
  expect_error(resume_in(with_state("best-nan", [](json& j) { j["has_best"] = false; })),
               "has_best is false");
  expect_error(resume_in(with_state("log", [](json& j) { j["log"][1][0] = 0; })),
               "log row 1 has step 0");
  // The untouched copy resumes: the checks above refuse the edits, not the copy.
  EXPECT_EQ(resume_in(copy_run_unverified(ckpt_, "untouched")).exit_code, 0);
}

TEST_F(RunDirCli, MixedRunsReorderedTokenizersAndDuplicateKeysAreRefused) {
  // Two runs with the same recipe reach the same step; files of one in the other's save are
  // caught by the run ids (the steps agree, so nothing else would notice).
  const fs::path other = dir_ / "other-run";
  ASSERT_EQ(glass("train" + data() + " --out " + q(other.string()) + " --iters 30 --eval-every 15" +
                  tiny())
                .exit_code,
            0);
  for (const char* file :
       {"train_state.json", "train_state.safetensors", "model.safetensors", "config.json"}) {
    SCOPED_TRACE(file);
    const fs::path mixed = copy_run_unverified(ckpt_, std::string("mixed-") + file);
    fs::remove(files_of(mixed) / file);  // hard links: replace the entry, not the shared file
    fs::copy_file(files_of(other) / file, files_of(mixed) / file);
    expect_error(
        glass("train --out " + q(mixed.string()) + tiny() + data() + " --resume --iters 40"),
        "mixes files of two runs");
  }
  // config.json whose tokenizer lists the same characters in another order.
  const fs::path swapped = copy_run_unverified(ckpt_, "swapped");
  const fs::path config_path = files_of(swapped) / "config.json";
  json config = json::parse(read_file(config_path));
  auto& chars = config["tokenizer"]["chars"];
  std::swap(chars[0], chars[1]);
  write_file(config_path, config.dump(2));
  expect_error(glass("sample --checkpoint " + q(swapped.string()) + " --tokens 5"),
               "the tokenizer does not match the one model.safetensors was trained with: id 1");
  expect_error(
      glass("train --out " + q(swapped.string()) + tiny() + data() + " --resume --iters 40"),
      "the tokenizer does not match");
  // Duplicate keys: in config.json, in train_state.json and in a safetensors header.
  const fs::path dup = copy_run_unverified(ckpt_, "dup-keys");
  std::string text = read_file(files_of(ckpt_) / "config.json");
  text.insert(text.find('{') + 1, "\"model\": {},");
  write_file(files_of(dup) / "config.json", text);
  expect_error(glass("sample --checkpoint " + q(dup.string())), "the key \"model\" appears twice");
  const fs::path dup_state = copy_run_unverified(ckpt_, "dup-state");
  text = read_file(files_of(ckpt_) / "train_state.json");
  text.insert(text.find('{') + 1, "\"step\": 0,");
  write_file(files_of(dup_state) / "train_state.json", text);
  expect_error(
      glass("train --out " + q(dup_state.string()) + tiny() + data() + " --resume --iters 40"),
      "the key \"step\" appears twice");
  const fs::path dup_header = copy_run_unverified(ckpt_, "dup-header");
  const std::string bytes = read_file(files_of(ckpt_) / "model.safetensors");
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  std::string header = bytes.substr(8, n);
  const std::size_t norm = header.find("\"norm.weight\"");
  ASSERT_NE(norm, std::string::npos);
  const std::string entry = header.substr(norm, header.find('}', norm) + 1 - norm);
  header.insert(header.rfind('}'), "," + entry);  // the same tensor name again
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string patched(8, '\0');
  for (int i = 0; i < 8; ++i) patched[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  fs::remove(files_of(dup_header) / "model.safetensors");
  write_file(files_of(dup_header) / "model.safetensors", patched + header + bytes.substr(8 + n));
  expect_error(glass("sample --checkpoint " + q(dup_header.string())),
               "the key \"norm.weight\" appears twice");
}

// ---- bounds -----------------------------------------------------------------------------------

TEST_F(RunDirCli, CountsAreBoundedWithAClearMessage) {
  const std::string base =
      "train" + data() + " --out " + q((dir_ / "never-bounds").string()) + " --iters 5";
  expect_error(glass(base + " --eval-iters 10001"),
               "--eval-iters: must be an integer from 1 to 10000 (got '10001')");
  expect_error(glass(base + " --sample-tokens 100001"),
               "--sample-tokens: must be an integer from 0 to 100000");
  expect_error(glass("train" + data() + " --iters 2000000000"),
               "--iters: must be an integer from 1 to 1000000000");
  expect_error(glass(base + " --eval-every 99999999999"), "--eval-every");
  expect_error(glass(base + " --warmup 1000000001"), "--warmup");
  expect_error(glass(base + " --batch-size 1000001"),
               "--batch-size: must be an integer from 1 to 1000000");
  expect_error(glass("sample --checkpoint " + q(ckpt_.string()) + " --tokens 1000001"),
               "--tokens: must be an integer from 1 to 1000000");
  EXPECT_FALSE(fs::exists(dir_ / "never-bounds"));
}

TEST_F(RunDirCli, CheckpointSizesAreComparedWithAvailableNotPhysicalMemory) {
  // A config.json whose context_length needs more than the memory available now but less than
  // the machine's physical memory: refused (comparing with physical memory let it through).
  const double available = glass::available_memory_bytes(),
               physical = glass::physical_memory_bytes();
  ASSERT_GT(available, 0);
  ASSERT_LE(available, physical);
  if (physical - available < 2e9) GTEST_SKIP() << "less than 2 GB of the memory is in use";
  const fs::path run = copy_run_unverified(ckpt_, "big-context");
  const fs::path config_path = files_of(run) / "config.json";
  json config = json::parse(read_file(config_path));
  // Per position: RoPE tables + one-sequence KV cache = head_dim * (1 + 2 * n_layers * n_kv_heads) floats.
  const double per_position = 4.0 * 16 * (1 + 2 * 1 * 1);
  const auto context = static_cast<std::size_t>((available + physical) / 2 / per_position);
  config["model"]["context_length"] = context;
  write_file(config_path, config.dump(2));
  expect_error(glass("sample --checkpoint " + q(run.string())),
               "more than the memory available now");
}

TEST_F(RunDirCli, TheTextTakesAboutItsOwnSizeInMemory) {
#if defined(GLASS_SANITIZE)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and redzones inflate the resident set "
                  "(8.9 bytes per byte measured); the memory bound is checked in the normal build";
#endif
  // 40 MB of text: the old loader held ~19 bytes per character (the text as char32, its ids as
  // int32, copies per split and per sampler); now the peak is a few bytes per character while
  // loading, and the ids are 1 byte each. Measured: the child's peak resident set (wait4).
  const std::string sample = read_file(text_);
  std::string big;
  while (big.size() < 40'000'000) big += sample;
  const fs::path big_text = dir_ / "big.txt";
  write_file(big_text, big);
  const std::string cmd =
      std::string(glass_test::binary_dir("/glass train --data ")) + q(big_text.string()) +
      " --out " + q((dir_ / "big-run").string()) +
      " --iters 1 --eval-every 1 --batch-size 4 --context 16 --eval-iters 1 --sample-tokens 0" +
      model_flags() + " >/dev/null 2>" + q((dir_ / "big-err.txt").string());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  ASSERT_EQ(::wait4(child, &status, 0, &usage), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_file(dir_ / "big-err.txt");
  const double peak = static_cast<double>(usage.ru_maxrss) * 1024;  // ru_maxrss is in kB
  const double per_byte = peak / static_cast<double>(big.size());
  std::printf("peak resident set %.0f MB for a %.0f MB text (%.1f bytes per byte)\n", peak / 1e6,
              static_cast<double>(big.size()) / 1e6, per_byte);
  EXPECT_LT(per_byte, 7.0);  // was ~19
}
