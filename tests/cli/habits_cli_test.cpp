// What users of other tools type, through the real `glass` binary:
// - typos get "did you mean" (edit distance over the command's own flags or the command names),
//   the usage line and a pointer to --help; -v, -V and --version print the version; a long
//   flag with one dash (-temp) is named, not read as a short one (-t emp); a missing -m says
//   so and takes the directory given without it; choices (--format GGUF) are taken in any case;
// - llama.cpp's spellings (--model, -f/--file, --n-predict, -c/--ctx-size, --repeat-penalty,
//   --repeat-last-n, --min-p) and nanoGPT's (--max_new_tokens, --num_samples, --start, also
//   as --key=value) mean what they mean there; -ngl is refused with a sentence, not read as -n gl;
// - the stdin prompt loses one trailing newline (as the shell's $(...)), and prompts from
//   standard input or a file are read up to 1 MiB: /dev/zero and `yes` end in seconds.

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "autograd/threads.hpp"
#include "cli_test_util.hpp"
#include "test_paths.hpp"

namespace fs = std::filesystem;

namespace {

using glass_test::CliRun;
using glass_test::q;
using glass_test::read_file;
using glass_test::write_file;

class HabitsCli : public ::testing::Test {
 protected:
  static fs::path dir_;
  static fs::path ckpt_;  // a tiny checkpoint trained once (training context 16)

  static CliRun glass(const std::string& args) {
    return glass_test::run_glass(args, dir_, "timeout 60 ");
  }

  /// A bash command line (for pipes), with stdout and stderr captured.
  static CliRun shell(const std::string& line) {
    const fs::path out = dir_ / "sh-out.txt", err = dir_ / "sh-err.txt";
    const int status = std::system(
        ("bash -c " + q(line) + " >" + q(out.string()) + " 2>" + q(err.string())).c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(out), read_file(err)};
  }

  static void SetUpTestSuite() {
    dir_ = glass_test::temp_dir("glass-habits-cli");
    write_file(dir_ / "text.txt", glass_test::corpus_start(6000));
    ckpt_ = dir_ / "ckpt";
    const CliRun r = glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                           q(ckpt_.string()) + " --iters 4 --eval-every 4" + glass_test::tiny(5));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string m() { return " -m " + q(ckpt_.string()); }

  static void expect_error(const CliRun& r, const std::string& phrase) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.exit_code, 124) << "timed out (a hang)";
    EXPECT_NE(r.err.find(phrase), std::string::npos) << "stderr was: " << r.err;
    EXPECT_EQ(r.err.find("terminate called"), std::string::npos) << r.err;
  }
};

fs::path HabitsCli::dir_, HabitsCli::ckpt_;

}  // namespace

// ---- mistakes -----------------------------------------------------------------------------------

TEST_F(HabitsCli, AMisspeltFlagGetsDidYouMeanTheUsageAndHelp) {
  // Was: "The following arguments were not expected: 10 --iter".
  const CliRun r = glass("train --iter 10");
  expect_error(r,
               "error: glass train: unknown flag --iter; did you mean --iters?\n"
               "usage: glass train [OPTIONS]\n"
               "Run glass train --help for every flag of train.");
  expect_error(glass("sample" + m() + " --tempp 0.5"),
               "unknown flag --tempp; did you mean --temp?");
  expect_error(glass("sample" + m() + " --top-pp=0.9"),
               "unknown flag --top-pp; did you mean --top-p?");
  // A required option shows in the usage line; a flag far from every other gets no guess.
  const CliRun far = glass("sample" + m() + " --frobnicate");
  expect_error(far, "unknown flag --frobnicate\nusage: glass sample --checkpoint TEXT [OPTIONS]");
  EXPECT_EQ(far.err.find("did you mean"), std::string::npos) << far.err;
}

TEST_F(HabitsCli, AMisspeltCommandGetsDidYouMean) {
  expect_error(glass("trian --iters 5"), "unknown command 'trian'; did you mean 'train'?");
  expect_error(glass("smaple" + m()), "unknown command 'smaple'; did you mean 'sample'?");
  expect_error(glass("inpsect"), "did you mean 'inspect'?");
}

TEST_F(HabitsCli, AnOptionGivenTwiceIsNamedWithBothValues) {
  // Was: "--context: At Most 1 required but received 2" (CLI11's words). The exit code stays
  // CLI11's for this refusal (ArgumentMismatch), as a misspelt flag keeps ExtrasError's.
  const CliRun r = glass("train --context 64 --context 32 --iters 1");
  expect_error(r,
               "error: glass train: --context given twice (--context 64, then --context 32); "
               "give it once\n");
  EXPECT_EQ(r.exit_code, 114) << r.err;  // CLI::ExitCodes::ArgumentMismatch
  EXPECT_EQ(r.err.find("At Most"), std::string::npos) << r.err;
  // Two spellings of one option, a value attached or after '=': the spellings as typed.
  expect_error(glass("sample" + m() + " -n5 --n-predict=9"),
               "glass sample: -n/--tokens given twice (-n 5, then --n-predict 9); give it once");
  expect_error(glass("sample" + m() + " -m other"),
               "glass sample: -m given twice (-m " + ckpt_.string() + ", then -m other)");
  // Switches may repeat.
  const CliRun twice = glass("sample" + m() + " -n 3 --json --json");
  EXPECT_EQ(twice.exit_code, 0) << twice.err;
}

TEST_F(HabitsCli, ALongFlagWithOneDashIsNamedNotReadAsAShortOne) {
  // Was: "--threads: must be an integer ... (got 'emp')" (CLI11 read -temp as -t emp).
  const CliRun temp = glass("sample" + m() + " -p x -temp 0.5");
  expect_error(temp,
               "error: glass sample: unknown flag -temp; did you mean --temp? (a long flag takes "
               "two dashes)\nusage: glass sample --checkpoint TEXT [OPTIONS]");
  EXPECT_EQ(temp.err.find("got 'emp'"), std::string::npos) << temp.err;
  expect_error(glass("sample" + m() + " -prompt x"),
               "unknown flag -prompt; did you mean --prompt?");
  expect_error(glass("sample" + m() + " -p x -tmep 0.5"),
               "unknown flag -tmep; did you mean --temp?");
  // Every command: a word with no short flag of its first letter, and one that is a long flag.
  const std::string text = q((dir_ / "text.txt").string());
  expect_error(glass("train -iters 5"), "glass train: unknown flag -iters; did you mean --iters?");
  expect_error(glass("eval" + m() + " -data " + text), "glass eval: unknown flag -data; did you");
  expect_error(glass("inspect" + m() + " -p x -layer 0"),
               "unknown flag -layer; did you mean --layer?");
  expect_error(glass("export" + m() + " -format gguf --out x.gguf"),
               "unknown flag -format; did you mean --format?");
  expect_error(glass("serve" + m() + " -port 0"), "unknown flag -port; did you mean --port?");
  expect_error(glass("gradcheck -op matmul"), "unknown flag -op; did you mean --op?");
  expect_error(glass("gradcheck -frobnicate"), "glass gradcheck: unknown flag -frobnicate\nusage");
  // Short flags with their value attached are still short flags.
  const CliRun attached = glass("sample" + m() + " -pCap -n3 -s1 -t1");
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(attached.out.rfind("Cap", 0), 0u) << attached.out;
}

TEST_F(HabitsCli, AMissingCheckpointNamesDashMAndTakesTheDirectoryGivenWithoutIt) {
  // Was: "--checkpoint is required", with no word of -m.
  const std::string ckpt = q(ckpt_.string());
  expect_error(glass("sample " + ckpt + " -p x"),
               "error: glass sample: -m/--checkpoint is required: checkpoint directory written by "
               "glass train; '" +
                   ckpt_.string() + "' is a directory: did you mean -m " + ckpt_.string() +
                   "?\nusage: glass sample --checkpoint TEXT [OPTIONS]\n");
  const CliRun none = glass("sample -p x");
  expect_error(none, "glass sample: -m/--checkpoint is required: checkpoint directory");
  EXPECT_EQ(none.err.find("is a directory"), std::string::npos) << none.err;
  const std::string text = q((dir_ / "text.txt").string());
  expect_error(glass("eval " + ckpt + " --data " + text),
               "did you mean -m " + ckpt_.string() + "?");
  expect_error(glass("inspect " + ckpt + " -p x"), "did you mean -m " + ckpt_.string() + "?");
  expect_error(glass("export " + ckpt + " --format gguf --out x.gguf"),
               "glass export: -m/--checkpoint is required");
  expect_error(glass("eval" + m() + " " + text),
               "glass eval: --data is required: UTF-8 text file to evaluate on (text the model "
               "never saw); '" +
                   (dir_ / "text.txt").string() + "' is a file: did you mean --data");
  // A misspelt flag explains the missing option best.
  expect_error(glass("sample --checkpont " + ckpt + " -p x"),
               "unknown flag --checkpont; did you mean --checkpoint?");
}

TEST_F(HabitsCli, ChoicesAreTakenInAnyCase) {
  // Was: "--format: GGUF not in {gguf,llama2c}"-like refusals of a capital letter.
  const fs::path gguf = dir_ / "any-case.gguf";
  const CliRun exported = glass("export" + m() + " --format GGUF --out " + q(gguf.string()));
  EXPECT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(fs::exists(gguf));
  expect_error(glass("export" + m() + " --format ONNX --out x"), "unknown export format 'ONNX'");
  const std::string args = " -p Cap -n 8 -s 3";
  const CliRun lower = glass("sample" + m() + args + " --ops reference --window-mode exact");
  const CliRun upper = glass("sample" + m() + args + " --ops Reference --window-mode EXACT");
  const CliRun old_name =
      glass("sample" + m() + args + " --attention REFERENCE --window-mode exact");
  ASSERT_EQ(lower.exit_code, 0) << lower.err;
  EXPECT_EQ(upper.exit_code, 0) << upper.err;
  EXPECT_EQ(upper.out, lower.out);
  EXPECT_EQ(old_name.exit_code, 0) << old_name.err;
  EXPECT_EQ(old_name.out, lower.out);
  expect_error(glass("sample" + m() + " --ops flash"), "--ops");
  const CliRun tokenizer = glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
                                 q((dir_ / "any-case-run").string()) +
                                 " --tokenizer Char --ops FAST --iters 1" + glass_test::tiny(0));
  EXPECT_EQ(tokenizer.exit_code, 0) << tokenizer.err;
}

TEST_F(HabitsCli, TheWarmupAdviceFitsAShortRun) {
  // Was: "Use a --warmup well below 1 (e.g. 1)" for --iters 1.
  const CliRun r =
      glass("train --data " + q((dir_ / "text.txt").string()) + " --out " +
            q((dir_ / "one-step").string()) + " --iters 1 --eval-every 1" + glass_test::tiny(5));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string said = r.out + r.err;  // the trainer's warnings go with its progress lines
  EXPECT_NE(said.find("Use a --warmup below 1 (e.g. --warmup 0)"), std::string::npos) << said;
  EXPECT_EQ(said.find("well below 1 (e.g. 1)"), std::string::npos) << said;
}

TEST_F(HabitsCli, DashVAndDashCapitalVPrintTheVersion) {
  const CliRun version = glass("--version");
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out.rfind("glass ", 0), 0u) << version.out;
  for (const char* flag : {"-v", "-V"}) {
    const CliRun r = glass(flag);
    EXPECT_EQ(r.exit_code, 0) << flag << "\n" << r.err;
    EXPECT_EQ(r.out, version.out) << flag;
  }
}

// ---- llama.cpp and nanoGPT spellings ------------------------------------------------------------

TEST_F(HabitsCli, LlamaCppAndNanoGptSpellingsMeanTheSame) {
  const CliRun ours = glass("sample" + m() + " -p Capitu -n 20 --temp 0.7 -s 5 --num-samples 2");
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  EXPECT_EQ(ours.out.rfind("Capitu", 0), 0u) << ours.out;
  const CliRun llama = glass("sample --model " + q(ckpt_.string()) +
                             " -p Capitu --n-predict 20 --temp 0.7 --seed 5 --num-samples 2");
  const CliRun nano =
      glass("sample" + m() +
            " --start=Capitu --max_new_tokens=20 --temperature=0.7 --seed=5 --num_samples=2");
  ASSERT_EQ(llama.exit_code, 0) << llama.err;
  ASSERT_EQ(nano.exit_code, 0) << nano.err;
  EXPECT_EQ(llama.out, ours.out);
  EXPECT_EQ(nano.out, ours.out);

  write_file(dir_ / "prompt.txt", "Capitu");
  const std::string file = q((dir_ / "prompt.txt").string());
  for (const std::string& flag :
       {"-f " + file, "--file " + file, "--prompt-file " + file, "--start=FILE:" + file}) {
    const CliRun r = glass("sample" + m() + " " + flag + " -n 20 --temp 0.7 -s 5 --num-samples 2");
    EXPECT_EQ(r.exit_code, 0) << flag << "\n" << r.err;
    EXPECT_EQ(r.out, ours.out) << flag;
  }
  expect_error(glass("sample" + m() + " -p x --start y"), "give the prompt once");
}

TEST_F(HabitsCli, GpuLayersAreRefusedWithASentenceNotReadAsDashN) {
  // Was: "--tokens: must be an integer from 1 to 1000000 (got 'gl')".
  for (const std::string flag : {"-ngl 0", "-ngl 99", "--n-gpu-layers 20", "--n-gpu-layers=20"}) {
    const CliRun r = glass("sample" + m() + " -p Capitu " + flag);
    expect_error(r, "GlassLLM runs on the CPU");
    EXPECT_EQ(r.err.find("got 'gl'"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << flag;
  }
}

TEST_F(HabitsCli, CtxSizeIsTheWindowWithinWhatTheModelHas) {
  // The tiny model trained on windows of 16; its positions go to context_length (256).
  const CliRun small = glass("sample" + m() + " -p Capitu -n 20 --temp 0 -c 8");
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const CliRun also = glass("sample" + m() + " -p Capitu -n 20 --temp 0 --ctx-size 8");
  EXPECT_EQ(also.out, small.out);
  const CliRun past = glass("sample" + m() + " -p Capitu -n 20 --temp 0 -c 20");
  ASSERT_EQ(past.exit_code, 0) << past.err;
  EXPECT_NE(past.err.find("note: --ctx-size 20 is past the 16 characters the model trained on"),
            std::string::npos)
      << past.err;
  expect_error(glass("sample" + m() + " -p Capitu -c 100000"),
               "--ctx-size 100000: the model has positions for at most 256 characters");
  expect_error(glass("sample" + m() + " -p Capitu -c 0"), "--ctx-size");
}

TEST_F(HabitsCli, MinPOneIsGreedyAndTheNewSamplersAreReproducible) {
  // min-p 1 keeps only the tokens as likely as the most likely one: greedy (no ties in float
  // logits of a trained model), whatever the temperature and the seed.
  const CliRun greedy = glass("sample" + m() + " -p Capitu -n 30 --temp 0");
  const CliRun min_p = glass("sample" + m() + " -p Capitu -n 30 --temp 1.5 --min-p 1 -s 3");
  ASSERT_EQ(greedy.exit_code, 0) << greedy.err;
  ASSERT_EQ(min_p.exit_code, 0) << min_p.err;
  EXPECT_EQ(min_p.out, greedy.out);

  const std::string args =
      " -p Capitu -n 40 --temp 0.9 --min-p 0.05 --repeat-penalty 1.3 --repeat-last-n 8 -s 11";
  const CliRun a = glass("sample" + m() + args), b = glass("sample" + m() + args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out) << "the same --seed, the same text";
  // Greedy with a strong penalty over the last 4 characters cannot be plain greedy's text.
  const CliRun penalised =
      glass("sample" + m() + " -p Capitu -n 30 --temp 0 --repeat-penalty 100 --repeat-last-n 4");
  ASSERT_EQ(penalised.exit_code, 0) << penalised.err;
  EXPECT_NE(penalised.out, greedy.out);

  const CliRun json = glass("sample" + m() + args + " --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["min_p"], 0.05);
  EXPECT_EQ(j["repeat_penalty"], 1.3);
  EXPECT_EQ(j["repeat_last_n"], 8);
  EXPECT_EQ(j["context"], 16);
  expect_error(glass("sample" + m() + " --min-p 1.5"), "--min-p: must be a number in [0, 1]");
  expect_error(glass("sample" + m() + " --repeat-penalty 0"), "--repeat-penalty");
}

// ---- prompts from standard input and files ------------------------------------------------------

TEST_F(HabitsCli, TheStdinPromptLosesOneTrailingNewline) {
  const std::string glass_bin = glass_test::binary_dir("/glass sample") + m() + " -n 15 --temp 0";
  const CliRun direct = glass("sample" + m() + " -p Capitu -n 15 --temp 0");
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  const CliRun echoed = shell("echo Capitu | " + glass_bin + " -p -");
  EXPECT_EQ(echoed.exit_code, 0) << echoed.err;
  EXPECT_EQ(echoed.out, direct.out) << "echo's newline is not part of the prompt";
  // Only one: a prompt that ends a paragraph keeps its first newline.
  const CliRun one = shell(glass_bin + " -p $'Capitu\\n'");  // bash: $'...' is a newline
  const CliRun two = shell("printf 'Capitu\\n\\n' | " + glass_bin + " -p -");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(two.out, one.out);
  EXPECT_EQ(two.out.rfind("Capitu\n", 0), 0u) << two.out;
}

TEST_F(HabitsCli, EndlessPromptsStopAtOneMebibyteWithAClearMessage) {
  // Was: /dev/zero took the machine's 24 GB; `yes` grew without end.
  const std::string limit = "is longer than 1048576 bytes (1 MiB), the most glass reads";
  expect_error(glass("sample" + m() + " --prompt-file /dev/zero -n 5"),
               "the prompt from --prompt-file '/dev/zero' " + limit);
  const CliRun yes =
      shell("yes abc | timeout 60 " + glass_test::binary_dir("/glass sample") + m() + " -p - -n 5");
  expect_error(yes, "the prompt from standard input " + limit);
  // 1 MiB exactly is read; the model sees its last 16 characters (a note says so).
  write_file(dir_ / "big.txt", std::string((1 << 20) - 6, ' ') + "Capitu");
  const CliRun big =
      glass("sample" + m() + " -f " + q((dir_ / "big.txt").string()) + " -n 5 --temp 0");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(
      big.err.find("note: the prompt has 1048576 characters; the model sees only its last 16: the "
                   "model's context is 16 characters (the windows it trained on); past them, "
                   "generation rolls its window on: each new character sees the 16 before it"),
      std::string::npos)
      << big.err;
  EXPECT_EQ(big.out.rfind("          Capitu", 0), 0u) << big.out.substr(0, 40);
}

// ---- the thread count ----------------------------------------------------------------------------

TEST_F(HabitsCli, SampleNamesItsThreadCountAndTheCountDoesNotChangeTheText) {
  // -t sets the count; the speed line says how many were used, so a user can compare -t values.
  const CliRun one = glass("sample" + m() + " -n 20 --seed 3 -t 1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.err.find("characters/s, 1 thread)"), std::string::npos) << one.err;
  const CliRun two = glass("sample" + m() + " -n 20 --seed 3 -t 2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_NE(two.err.find("characters/s, 2 threads)"), std::string::npos) << two.err;
  EXPECT_EQ(two.out, one.out) << "the thread count does not change the text";

  // Without -t, generation measures one thread against every core as it goes and keeps the
  // faster (sample/thread_choice.hpp); the line says how many characters each count made,
  // and the text is the same.
  const CliRun chosen = glass("sample" + m() + " -n 200 --seed 3");
  const CliRun one_long = glass("sample" + m() + " -n 200 --seed 3 -t 1");
  ASSERT_EQ(chosen.exit_code, 0) << chosen.err;
  EXPECT_EQ(chosen.out, one_long.out);
  const std::size_t cores = glass::available_cores();
  if (cores == 1) {
    EXPECT_NE(chosen.err.find("characters/s, 1 thread)"), std::string::npos) << chosen.err;
    return;
  }
  std::smatch match;
  const std::string err = chosen.err;
  ASSERT_TRUE(std::regex_search(
      err, match,
      std::regex(R"(threads chosen by measuring: (\d+) characters on 1 thread, (\d+) on (\d+); )"
                 R"(-t sets the count\))")))
      << err;
  const int on_one = std::stoi(match[1]), on_all = std::stoi(match[2]);
  EXPECT_EQ(std::stoul(match[3].str()), cores);
  EXPECT_EQ(on_one + on_all, 200) << err;
  EXPECT_GE(on_one, 8) << "the first measurement is 8 tokens on one thread";
  EXPECT_GE(on_all, 1) << "then every core is measured";
}

namespace {

// A binary replaced while it trains (a rebuild during a long run): Linux names the old file
// "/path/glass (deleted)" in /proc/self/exe, and the "sample from it:" line printed that, which
// the shell cannot run. The line names the path, which now holds the new binary.
TEST(ReplacedBinary, PrintedCommandsNameThePathWithoutDeleted) {
  const fs::path dir = glass_test::temp_dir("glass-replaced-binary");
  write_file(dir / "text.txt", glass_test::corpus_start(6000));
  const fs::path copy = dir / "g";
  fs::copy_file(glass_test::binary_dir("/glass"), copy);
  // Start a run, wait for its first evaluation line, replace the binary by a copy (the running
  // one's file is unlinked), then wait for the run's end.
  const std::string script =
      "cd " + q(dir.string()) +
      " && (./g train --data text.txt --out run --iters 300 --eval-every 100" +
      glass_test::tiny(5) + " </dev/null >out.txt 2>err.txt & pid=$!; " +
      "while ! grep -q 'val' out.txt 2>/dev/null; do sleep 0.05; done; " +
      "cp g g.new && mv g.new g; wait $pid)";
  ASSERT_EQ(std::system(script.c_str()), 0) << read_file(dir / "err.txt");
  const std::string out = read_file(dir / "out.txt");
  EXPECT_NE(out.find("sample from it: ./g sample --checkpoint run"), std::string::npos) << out;
  EXPECT_EQ(out.find("(deleted)"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
