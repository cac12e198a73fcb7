// attograd-translate from the outside: bad input is one clear line on stderr
// and exit code 2, never a crash; a saved model loads and predicts (tables,
// JSON lines, heatmaps).
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_util.h"

namespace {

using ag::testing::read_file;

struct ProgramRun {
  int exit_code = -1;
  std::string out, err;
};

// In a folder of this process's own (ScratchDir names it with the pid):
// ctest runs each TEST as its own process, two at a time.
// Runs the program with `args` (already shell-quoted where needed).
ProgramRun run(const std::string& args) {
  const std::string out = ag::testing::scratch_file("translate_cli", "stdout"),
                    err = ag::testing::scratch_file("translate_cli", "stderr");
  const std::string command =
      std::string(ATTOGRAD_TRANSLATE_PROGRAM) + " " + args + " >" + out + " 2>" + err;
  const int status = std::system(command.c_str());
  ProgramRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

// A line's tab-separated fields, an empty last one included (a tiny model
// may answer with no phoneme).
std::vector<std::string> columns(const std::string& line) {
  std::vector<std::string> fields;
  for (size_t begin = 0;;) {
    const size_t tab = line.find('\t', begin);
    fields.push_back(line.substr(begin, tab - begin));
    if (tab == std::string::npos) return fields;
    begin = tab + 1;
  }
}

::testing::AssertionResult fails_with(const std::string& args, const std::string& fragment) {
  const ProgramRun r = run(args);
  if (r.exit_code != 2)
    return ::testing::AssertionFailure()
           << args << ": exit code " << r.exit_code << ", stderr " << r.err;
  if (r.err.find(fragment) == std::string::npos || r.err.rfind("attograd-translate: ", 0) != 0)
    return ::testing::AssertionFailure()
           << args << ": stderr '" << r.err << "' lacks '" << fragment << "'";
  if (std::count(r.err.begin(), r.err.end(), '\n') != 1)
    return ::testing::AssertionFailure() << args << ": not one line: " << r.err;
  return ::testing::AssertionSuccess();
}

TEST(TranslateCli, BadFlags) {
  EXPECT_TRUE(fails_with("--frobnicate", "unknown option '--frobnicate'"));
  EXPECT_TRUE(fails_with("--steps", "--steps needs a value"));
  EXPECT_TRUE(fails_with("--steps abc", "--steps expects an integer"));
  EXPECT_TRUE(fails_with("--steps -5", "--steps expects an integer"));
  EXPECT_TRUE(fails_with("--steps 1e3", "got '1e3'"));
  EXPECT_TRUE(fails_with("--batch 0", "--batch expects an integer"));
  EXPECT_TRUE(fails_with("--lr nan", "--lr expects a number"));
  EXPECT_TRUE(fails_with("--label-smoothing 1.5", "--label-smoothing expects a number"));
  EXPECT_TRUE(fails_with("--threads 99999999999999999999", "--threads expects an integer"));
  EXPECT_TRUE(fails_with("--task french", "--task expects dates, reverse, sort"));
  EXPECT_TRUE(fails_with("--task french", "got 'french'"));
  EXPECT_TRUE(fails_with("--model gpt", "--model expects bahdanau or transformer, got 'gpt'"));
  EXPECT_TRUE(fails_with(
      "--attention cosine",
      "--attention expects one of additive, dot, general, multihead, general_scaled, keras_dot, "
      "keras_concat, keras_additive, "
      "got 'cosine'"));
  // The sizes' rules are the model classes' own, asked before any data is read.
  EXPECT_TRUE(fails_with("--encoder bidirectional --attention dot",
                         "the queries have 32 features and the keys 64"));
  EXPECT_TRUE(fails_with("--attention multihead --hidden 30 --heads 4",
                         "num_hiddens 30 is not a multiple of num_heads 4"));
  EXPECT_TRUE(fails_with("--encoder sideways", "unknown encoder 'sideways'"));
  EXPECT_TRUE(fails_with("--predict", "--predict needs at least one text"));
  EXPECT_TRUE(fails_with("--predict --json", "--predict needs at least one text"));
  EXPECT_TRUE(fails_with("--load x.npz --task sort", "--load takes the task"));
  EXPECT_TRUE(fails_with("--load x.npz --steps 10", "drop --steps"));
  EXPECT_TRUE(fails_with("--load a.npz --load b.npz --save both.npz",
                         "--save with 2 --load files: an ensemble is its members' files"));
  // A flag that shapes answers needs something to answer.
  EXPECT_TRUE(fails_with("--load x.npz --nbest 2 --json",
                         "--nbest --json: how answers are shown; there is nothing to answer"));
  EXPECT_TRUE(
      fails_with("--load x.npz --evaluate x.dict --heatmap x.png", "--heatmap: how answers"));
}

TEST(TranslateCli, BadFiles) {
  EXPECT_TRUE(fails_with("--load /nonexistent/model.npz", "/nonexistent/model.npz"));
  const std::string text_file = ag::testing::scratch_file("translate_cli", "not_npz.npz");
  std::ofstream(text_file) << "hello";
  EXPECT_TRUE(fails_with("--load " + text_file, "not_npz.npz"));
  const std::string plain = ag::testing::scratch_file("translate_cli", "plain.npz");
  ag::save_npz(plain, {{"weight", ag::ones({2})}});
  EXPECT_TRUE(fails_with("--load " + plain, "not a model saved by attograd-translate"));
  std::filesystem::remove(text_file);
  std::filesystem::remove(plain);
}

TEST(TranslateCli, TransformerFlags) {
  EXPECT_TRUE(fails_with("--model transformer --embed 8", "--embed: bahdanau's options"));
  EXPECT_TRUE(fails_with("--model transformer --layers 1 --attention dot",
                         "--attention --layers: bahdanau's options (this run's model is "
                         "transformer"));
  EXPECT_TRUE(fails_with("--heads 2", "--heads: the Transformer's and --attention multihead's"));
  EXPECT_TRUE(fails_with("--no-causal-mask", "--no-causal-mask: transformer's options"));
  EXPECT_TRUE(fails_with("--model transformer --hidden 30 --heads 4",
                         "bad Transformer sizes: hidden 30, heads 4"));
  EXPECT_TRUE(fails_with("--model transformer --hidden 33 --heads 1", "an even hidden size"));
  EXPECT_TRUE(fails_with("--model transformer --blocks 0", "--blocks expects an integer"));
  EXPECT_TRUE(fails_with("--model transformer --ffn x", "--ffn expects an integer"));
  EXPECT_TRUE(fails_with("--load x.npz --no-causal-mask", "--load takes the task"));
  EXPECT_TRUE(
      fails_with("--lr-schedule linear", "--lr-schedule expects constant or cosine, got 'linear'"));
}

// A saved Transformer predicts; --json adds the maps [blocks][heads][Tq][Tk]
// and --heatmap draws them beside the alignment.
TEST(TranslateCli, TransformerSavesAndShowsItsMaps) {
  const std::string model = ag::testing::scratch_file("translate_cli", "transformer.npz");
  const ProgramRun saved =
      run("--model transformer --task reverse --steps 3 --hidden 8 --heads 2 --ffn 8 --blocks 1 "
          "--no-causal-mask --train-size 300 --heldout 10 --eval-every 0 --stats --save " +
          model);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.err.find("NO look-ahead mask"), std::string::npos) << saved.err;
  EXPECT_NE(saved.out.find("\nloss_tail "), std::string::npos) << saved.out;

  const std::string heatmap = ag::testing::scratch_file("translate_cli", "maps.png");
  const ProgramRun json = run("--load " + model + " --predict 123 --json --heatmap " + heatmap);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  for (const char* key :
       {"\"weights\":[[", "\"decoder_input_tokens\":[\"<bos>\"", "\"encoder_self_attention\":[[[[",
        "\"decoder_self_attention\":[[[[", "\"cross_attention\":[[[["})
    EXPECT_NE(json.out.find(key), std::string::npos) << key << " in " << json.out;
  // One block of two heads: the encoder map's block holds two [4, 4] maps
  // ("123" and <eos>): its text ends after the second head.
  const size_t encoder = json.out.find("\"encoder_self_attention\":") + 25;
  const size_t encoder_end = json.out.find("]]]]", encoder);
  ASSERT_NE(encoder_end, std::string::npos);
  const std::string block = json.out.substr(encoder, encoder_end + 4 - encoder);
  EXPECT_EQ(std::count(block.begin(), block.end(), '['), 1 + 1 + 2 + 2 * 4) << block;
  for (const char* suffix :
       {"maps.png", "maps-encoder.png", "maps-decoder.png", "maps-cross.png"}) {
    EXPECT_TRUE(std::filesystem::exists(ag::testing::scratch_file("translate_cli", suffix)))
        << suffix;
    std::filesystem::remove(ag::testing::scratch_file("translate_cli", suffix));
  }
  std::filesystem::remove(model);
}

TEST(TranslateCli, SavedModelPredictsAndRejectsBadText) {
  const std::string model = ag::testing::scratch_file("translate_cli", "model.npz");
  const ProgramRun saved =
      run("--task reverse --steps 5 --embed 8 --hidden 8 --layers 1 --train-size "
          "500 --heldout 20 --eval-every 0 --save " +
          model);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.err.find("held-out: 20 examples"), std::string::npos) << saved.err;

  const ProgramRun table = run("--load " + model + " --predict 123 45");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_EQ(table.out.rfind("123  ->  ", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("\n45  ->  "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("<eos>"), std::string::npos) << table.out;

  const std::string heatmap = ag::testing::scratch_file("translate_cli", "align.svg");
  const ProgramRun json = run("--load " + model + " --predict 123 45 --json --heatmap " + heatmap);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  std::istringstream lines(json.out);
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    ++count;
    EXPECT_EQ(line.rfind("{\"input\":\"", 0), 0u) << line;
    for (const char* key :
         {"\"output\":", "\"source_tokens\":[", "\"output_tokens\":[", "\"weights\":[["})
      EXPECT_NE(line.find(key), std::string::npos) << line;
  }
  EXPECT_EQ(count, 2);
  const std::string first = ag::testing::scratch_file("translate_cli", "align-1.svg"),
                    second = ag::testing::scratch_file("translate_cli", "align-2.svg");
  EXPECT_TRUE(std::filesystem::exists(first));
  EXPECT_TRUE(std::filesystem::exists(second));

  EXPECT_TRUE(fails_with("--load " + model + " --predict 12a", "unknown character 'a' in \"12a\""));
  EXPECT_TRUE(fails_with("--load " + model + " --predict ''", "empty text"));
  EXPECT_TRUE(fails_with("--load " + model + " --predict 123456789012", "at most 10"));
  EXPECT_TRUE(fails_with("--load " + model + " --predict 12 --heatmap " +
                             ag::testing::scratch_file("translate_cli", "x.jpg"),
                         ".png or .svg"));
  for (const auto& path : {model, first, second}) std::filesystem::remove(path);
}

TEST(TranslateCli, G2pFlags) {
  EXPECT_TRUE(fails_with("--task g2p --train-size 100", "g2p's split comes from the dictionary"));
  EXPECT_TRUE(fails_with("--task g2p --heldout 10", "g2p's split comes from the dictionary"));
  EXPECT_TRUE(fails_with("--task dates --dict x.dict",
                         "--dict is read by the tasks that read a dictionary"));
  EXPECT_TRUE(fails_with("--evaluate x.dict", "--evaluate: 'dates' reads no dictionary"));
  EXPECT_TRUE(fails_with("--average-last 3", "--average-last averages the parameters"));
  EXPECT_TRUE(fails_with("--task g2p --average-last 3 --eval-every 0", "--eval-every N > 0"));
  EXPECT_TRUE(fails_with("--task g2p --average-last 1", "--average-last expects an integer"));
  EXPECT_TRUE(fails_with("--task g2p --dict /nonexistent/cmu.dict",
                         "/nonexistent/cmu.dict': CMUdict is in Debian's package"));
}

// Issue 63's flags: how they fit together.
TEST(TranslateCli, RunFlags) {
  EXPECT_TRUE(fails_with("--task g2p --checkpoint c.npz", "--checkpoint-every N go together"));
  EXPECT_TRUE(fails_with("--task g2p --checkpoint-every 5", "--checkpoint-every N go together"));
  EXPECT_TRUE(fails_with("--task dates --patience 3", "--patience counts dev evaluations"));
  EXPECT_TRUE(fails_with("--task g2p --patience 3 --eval-every 0", "--eval-every N > 0"));
  EXPECT_TRUE(fails_with("--task g2p --warmup 100 --lr-schedule cosine --steps 100",
                         "cosine needs steps after the warm-up, and --steps is 100"));
  EXPECT_TRUE(fails_with("--task g2p --encoder unidirectional --encoder-hidden 8",
                         "encoder_hiddens 8 with hidden size 256"));
  EXPECT_TRUE(fails_with("--task g2p --encoder bidirectional --attention dot --hidden 16",
                         "an encoder of half the width a direction (encoder_hiddens)"));
  EXPECT_TRUE(fails_with("--task g2p --alignment-reference a.tsv", "on --evaluate's words"));
  EXPECT_TRUE(fails_with("--norm-first", "--norm-first: transformer's options"));
  EXPECT_TRUE(fails_with("--load x.npz --resume c.npz", "--resume: training's (drop --load)"));
}

// A run killed (SIGKILL) once its first checkpoint is written, then resumed
// from it, saves the same model file, curve and figures as a run never
// stopped: the dot scoring function reading the bidirectional encoder at
// half width, dropout, two threads, label smoothing.
TEST(TranslateCli, AKilledRunResumesToTheSameBits) {
  const std::string sample = ag::testing::source_path("tests/data/cmudict-sample.dict");
  const std::string flags =
      "--task g2p --dict " + sample +
      " --encoder bidirectional --attention dot --encoder-hidden 4 --embed 8 --hidden 8 "
      "--layers 1 --dropout 0.1 --batch 16 --steps 3000 --eval-every 500 --lr 0.01 "
      "--label-smoothing 0.1 --seed 1 --threads 2 --skip-test --stats";
  const ProgramRun whole =
      run(flags + " --save " + ag::testing::scratch_file("translate_cli", "whole.npz") +
          " --curve " + ag::testing::scratch_file("translate_cli", "whole.csv"));
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  const std::string checkpoint = ag::testing::scratch_file("translate_cli", "run.ckpt.npz");
  const std::string resumable =
      flags + " --checkpoint " + checkpoint + " --checkpoint-every 100 --save " +
      ag::testing::scratch_file("translate_cli", "resumed.npz") + " --curve " +
      ag::testing::scratch_file("translate_cli", "resumed.csv");
  const std::string killed = std::string(ATTOGRAD_TRANSLATE_PROGRAM) + " " + resumable +
                             " >/dev/null 2>&1 & pid=$!; while [ ! -e " + checkpoint +
                             " ]; do sleep 0.01; done; kill -9 $pid; wait $pid";
  ASSERT_NE(std::system(("sh -c '" + killed + "'").c_str()), -1);
  ASSERT_TRUE(std::filesystem::exists(checkpoint));
  const ProgramRun resumed = run(resumable + " --resume " + checkpoint);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const size_t at = resumed.err.find("resumed from " + checkpoint + " after step ");
  ASSERT_NE(at, std::string::npos) << resumed.err;
  EXPECT_LT(std::stoll(resumed.err.substr(resumed.err.find("after step ", at) + 11)), 3000);
  EXPECT_EQ(read_file(ag::testing::scratch_file("translate_cli", "whole.npz")),
            read_file(ag::testing::scratch_file("translate_cli", "resumed.npz")));
  EXPECT_EQ(read_file(ag::testing::scratch_file("translate_cli", "whole.csv")),
            read_file(ag::testing::scratch_file("translate_cli", "resumed.csv")));
  const auto figures = [](const std::string& out) {
    std::string kept;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with("loss_") || line.starts_with("dev_") || line.starts_with("steps "))
        kept += line + "\n";
    return kept;
  };
  EXPECT_EQ(figures(whole.out), figures(resumed.out));
  EXPECT_NE(figures(whole.out).find("dev_wer "), std::string::npos) << whole.out;
  // Resumed once more, from the checkpoint of its last step, the run trains
  // no step, saves the same model and names the kept step's dev WER as the
  // run never stopped does, though a resumed run has only its curve.
  const ProgramRun finished = run(resumable + " --resume " + checkpoint);
  ASSERT_EQ(finished.exit_code, 0) << finished.err;
  EXPECT_NE(finished.err.find("resumed from " + checkpoint + " after step 3000\n"),
            std::string::npos)
      << finished.err;
  EXPECT_EQ(read_file(ag::testing::scratch_file("translate_cli", "whole.npz")),
            read_file(ag::testing::scratch_file("translate_cli", "resumed.npz")));
  const auto kept_line = [](const std::string& err) {
    const size_t at = err.find("\nkept the parameters of step ");
    return at == std::string::npos ? std::string()
                                   : err.substr(at + 1, err.find('\n', at + 1) - at);
  };
  ASSERT_NE(kept_line(whole.err), "") << whole.err;
  EXPECT_EQ(kept_line(whole.err), kept_line(finished.err)) << finished.err;
}

// Another system's answers scored by the same code as a model's: a tiny
// dictionary, one word right, one wrong by one phoneme, one missing.
TEST(TranslateCli, ScoreOutputsScoresAnotherSystemsAnswers) {
  const std::string dict = ag::testing::scratch_file("translate_cli", "three.dict"),
                    answers = ag::testing::scratch_file("translate_cli", "answers.tsv");
  std::ofstream(dict) << "knife N AY F\nread R IY D\nread(2) R EH D\nbox B AA K S\n";
  std::ofstream(answers) << "knife\tN AY F\nread\tR EH T\r\n";
  const ProgramRun scored = run("--score-outputs " + answers + " --evaluate " + dict + " --stats");
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  // read: 1 edit from R EH D (3 phonemes); box: none given, 4 edits from B AA K S.
  EXPECT_NE(scored.err.find("3 words, WER 66.67%, PER 50.00% (5 edits / 10 phonemes)"),
            std::string::npos)
      << scored.err;
  EXPECT_NE(scored.err.find("1 of the dictionary's entries have no answer"), std::string::npos)
      << scored.err;
  EXPECT_NE(scored.out.find("eval_missing 1"), std::string::npos) << scored.out;
  EXPECT_TRUE(fails_with("--score-outputs " + answers, "--score-outputs scores a file of answers"));
  EXPECT_TRUE(fails_with("--score-outputs /nonexistent.tsv --evaluate " + dict,
                         "--score-outputs: cannot read '/nonexistent.tsv'"));
}

// A small g2p model trained on the committed sample: dev selection, test
// figures, a word list in and out, another dictionary scored.
TEST(TranslateCli, G2pTrainsPredictsAndEvaluates) {
  const std::string sample = ag::testing::source_path("tests/data/cmudict-sample.dict");
  const std::string model = ag::testing::scratch_file("translate_cli", "g2p.npz");
  const ProgramRun saved = run("--task g2p --dict " + sample +
                               " --steps 20 --embed 8 --hidden 16 --batch 16 --eval-every 10 "
                               "--stats --save " +
                               model);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  for (const char* line : {"278 words with 300 pronunciations kept", "dev 24 words, test 10 words",
                           "bidirectional encoder", "lr 0.0015 cosine, 20 steps",
                           "kept the parameters of step", "\ntest: 10 words, WER"})
    EXPECT_NE(saved.err.find(line), std::string::npos) << line << " in " << saved.err;
  for (const char* key : {"\ntest_wer ", "\ntest_per ", "\ndev_wer ", "\nbest_step "})
    EXPECT_NE(saved.out.find(key), std::string::npos) << key << " in " << saved.out;

  // Label smoothing and checkpoint averaging: the mean of the last three
  // evaluations' parameters is scored on dev, one more candidate.
  const ProgramRun averaged =
      run("--task g2p --dict " + sample +
          " --steps 30 --embed 8 --hidden 16 --batch 16 --eval-every 10 --label-smoothing 0.1 "
          "--average-last 3 --stats");
  ASSERT_EQ(averaged.exit_code, 0) << averaged.err;
  for (const char* line : {"label smoothing 0.1",
                           "the mean of the last 3 evaluations' parameters: dev: 24 words, WER"})
    EXPECT_NE(averaged.err.find(line), std::string::npos) << line << " in " << averaged.err;
  EXPECT_NE(averaged.out.find("\naveraged_checkpoints "), std::string::npos) << averaged.out;

  const std::string words = ag::testing::scratch_file("translate_cli", "words.txt");
  std::ofstream(words) << "knife\n\n  Box \r\nqueue\n";
  const ProgramRun listed = run("--load " + model + " --predict-file " + words);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  std::istringstream lines(listed.out);
  std::vector<std::string> got;
  for (std::string line; std::getline(lines, line);) got.push_back(line);
  ASSERT_EQ(got.size(), 3u) << listed.out;
  EXPECT_EQ(got[0].rfind("knife\t", 0), 0u) << got[0];
  EXPECT_EQ(got[1].rfind("Box\t", 0), 0u) << got[1];  // read as "box"
  const ProgramRun from_stdin = run("--load " + model + " --predict-file - --json < " + words);
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out.rfind("{\"input\":\"knife\"", 0), 0u) << from_stdin.out;

  // As users type lists: a word the model cannot read is named with its line
  // and skipped, the rest answered, exit code 1.
  const std::string mixed = ag::testing::scratch_file("translate_cli", "mixed.txt");
  std::ofstream(mixed) << "knife\n\nx-ray\nQUEUE\r\n" << std::string(40, 'a') << "\n";
  const ProgramRun skipping = run("--load " + model + " --predict-file " + mixed);
  EXPECT_EQ(skipping.exit_code, 1) << skipping.err;
  EXPECT_NE(skipping.err.find("mixed.txt:3: translate: unknown character '-' in \"x-ray\""),
            std::string::npos)
      << skipping.err;
  EXPECT_NE(skipping.err.find("mixed.txt:5: translate: \"" + std::string(40, 'a') +
                              "\" has 40 characters; the model reads at most"),
            std::string::npos)
      << skipping.err;
  EXPECT_NE(skipping.err.find("2 of 4 words skipped"), std::string::npos) << skipping.err;
  EXPECT_EQ(std::count(skipping.out.begin(), skipping.out.end(), '\n'), 2) << skipping.out;
  EXPECT_NE(skipping.out.find("QUEUE\t1\t1\t"), std::string::npos) << skipping.out;

  // --nbest: Sequitur's four columns, word, rank, posterior, phonemes (a
  // fifth, lexicon or model, with --show-source); the posteriors of a word
  // sum to 1. --lexicon answers its words first.
  const std::string lexicon = ag::testing::scratch_file("translate_cli", "mine.dict");
  std::ofstream(lexicon) << "knife N AY F\n";
  for (const bool with_source : {false, true}) {
    const ProgramRun nbest =
        run("--load " + model + " --predict-file " + words + " --nbest 3 --lexicon " + lexicon +
            (with_source ? " --show-source" : ""));
    ASSERT_EQ(nbest.exit_code, 0) << nbest.err;
    std::istringstream variants(nbest.out);
    double queue_mass = 0;
    int queue_ranks = 0;
    for (std::string line; std::getline(variants, line);) {
      const std::vector<std::string> fields = columns(line);
      ASSERT_EQ(fields.size(), with_source ? 5u : 4u) << line;
      if (fields[0] == "knife") {
        EXPECT_EQ(line, with_source ? "knife\t1\t1\tN AY F\tlexicon" : "knife\t1\t1\tN AY F");
      }
      if (fields[0] != "queue") continue;
      EXPECT_EQ(fields[1], std::to_string(++queue_ranks));
      if (with_source) {
        EXPECT_EQ(fields[4], "model");
      }
      queue_mass += std::stod(fields[2]);
    }
    EXPECT_EQ(queue_ranks, 3) << nbest.out;
    EXPECT_NEAR(queue_mass, 1.0, 1e-4);
  }
  const ProgramRun posteriors =
      run("--load " + model + " --predict-file " + words + " --nbest 2 --json");
  ASSERT_EQ(posteriors.exit_code, 0) << posteriors.err;
  for (const char* key : {"\"source\":\"model\"", "\"confidence\":", "\"phoneme_probs\":[",
                          "\"variants\":[{", "\"posterior\":", "\"rank\":2"})
    EXPECT_NE(posteriors.out.find(key), std::string::npos) << key << " in " << posteriors.out;
  EXPECT_TRUE(fails_with("--load " + model + " --predict-file " + words + " --pmass 0.9",
                         "--pmass chooses among the --nbest variants"));
  EXPECT_TRUE(fails_with("--load " + model + " --predict-file " + words + " --nbest 3 --beam 2",
                         "--nbest 3 needs a beam at least as wide; --beam is 2"));

  // --predict's words take the same flags: the n best, a lexicon, the source
  // column, JSON; a word the model cannot read is an error (it was typed).
  const ProgramRun typed = run("--load " + model + " --predict Knife queue --nbest 2 --lexicon " +
                               lexicon + " --show-source");
  ASSERT_EQ(typed.exit_code, 0) << typed.err;
  EXPECT_EQ(typed.out.rfind("Knife\t1\t1\tN AY F\tlexicon\nqueue\t1\t", 0), 0u) << typed.out;
  EXPECT_NE(typed.out.find("\nqueue\t2\t"), std::string::npos) << typed.out;
  EXPECT_EQ(std::count(typed.out.begin(), typed.out.end(), '\n'), 3) << typed.out;
  const ProgramRun typed_json =
      run("--load " + model + " --predict knife --pmass 0.5 --nbest 3 --json");
  ASSERT_EQ(typed_json.exit_code, 0) << typed_json.err;
  EXPECT_EQ(typed_json.out.rfind("{\"input\":\"knife\"", 0), 0u) << typed_json.out;
  EXPECT_TRUE(fails_with("--load " + model + " --predict knife x-ray --nbest 2",
                         "unknown character '-' in \"x-ray\""));
  // --heatmap draws a list's answers too, one picture a word.
  const std::string pictures = ag::testing::scratch_file("translate_cli", "words.svg");
  const ProgramRun drawn = run("--load " + model + " --predict-file " + words + " --heatmap " +
                               pictures + " --lexicon " + lexicon);
  ASSERT_EQ(drawn.exit_code, 0) << drawn.err;
  EXPECT_NE(drawn.err.find("knife is the lexicon's: no alignment to draw"), std::string::npos)
      << drawn.err;
  EXPECT_FALSE(std::filesystem::exists(
      ag::testing::scratch_file("translate_cli", "words-1.svg")));  // knife: the lexicon's
  EXPECT_TRUE(
      std::filesystem::exists(ag::testing::scratch_file("translate_cli", "words-2.svg")));  // Box
  EXPECT_TRUE(
      std::filesystem::exists(ag::testing::scratch_file("translate_cli", "words-3.svg")));  // queue

  const ProgramRun scored = run("--load " + model + " --evaluate " + sample + " --stats");
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_NE(scored.err.find(sample + ": 278 words, WER "), std::string::npos) << scored.err;
  EXPECT_NE(scored.out.find("\neval_wer "), std::string::npos) << scored.out;
  // The worst words: word, output, nearest pronunciation, edits.
  const std::string first = scored.out.substr(0, scored.out.find('\n'));
  EXPECT_EQ(std::count(first.begin(), first.end(), '\t'), 3) << first;

  EXPECT_TRUE(fails_with("--load " + model + " --predict caf\xc3\xa9",
                         "unknown character '\xc3\xa9' in \"caf\xc3\xa9\""));
  const std::string dates = ag::testing::scratch_file("translate_cli", "dates.npz");
  ASSERT_EQ(run("--task dates --steps 1 --embed 4 --hidden 4 --layers 1 --train-size 100 "
                "--heldout 5 --eval-every 0 --save " +
                dates)
                .exit_code,
            0);
  EXPECT_TRUE(fails_with("--load " + dates + " --evaluate " + sample,
                         "--evaluate: 'dates' reads no dictionary"));
  EXPECT_TRUE(fails_with("--load " + dates + " --predict 1979 --lexicon " + lexicon,
                         "--lexicon: 'dates' reads no dictionary"));
  // Another task's model answers as lines too, with its n best.
  const ProgramRun date_lines = run("--load " + dates + " --predict 1979 --nbest 2");
  ASSERT_EQ(date_lines.exit_code, 0) << date_lines.err;
  EXPECT_EQ(date_lines.out.rfind("1979\t1\t", 0), 0u) << date_lines.out;
  EXPECT_NE(date_lines.out.find("\n1979\t2\t"), std::string::npos) << date_lines.out;
  for (const auto& path : {model, words, dates}) std::filesystem::remove(path);
}

// p2g, from the outside: it trains on the sample with g2p's recipe and its
// own figures, spells typed sounds (as CMUdict writes them or not), draws
// the alignment over the phonemes, gives the n best, reads a lexicon
// backwards and scores a dictionary.
TEST(TranslateCli, P2gTrainsSpellsAndEvaluates) {
  const std::string sample = ag::testing::source_path("tests/data/cmudict-sample.dict");
  const std::string model = ag::testing::scratch_file("translate_cli", "p2g.npz");
  const ProgramRun saved = run("--task p2g --dict " + sample +
                               " --steps 20 --embed 8 --hidden 16 --batch 16 --eval-every 10 "
                               "--stats --save " +
                               model);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  for (const char* line :
       {"dev 26 pronunciations, test 11 pronunciations", "on p2g:", "dev word accuracy",
        "\ntest: 11 pronunciations, word accuracy", "letter error rate"})
    EXPECT_NE(saved.err.find(line), std::string::npos) << line << " in " << saved.err;
  for (const char* key : {"\ntest_word_accuracy ", "\ntest_letter_error_rate ",
                          "\ndev_word_accuracy ", "\nbest_step "})
    EXPECT_NE(saved.out.find(key), std::string::npos) << key << " in " << saved.out;

  const std::string picture = ag::testing::scratch_file("translate_cli", "knife.svg");
  const ProgramRun spelled = run("--load " + model + " --predict 'n ay1 f' --heatmap " + picture);
  ASSERT_EQ(spelled.exit_code, 0) << spelled.err;
  EXPECT_EQ(spelled.out.rfind("N AY F  ->  ", 0), 0u) << spelled.out;
  const std::string svg = ag::testing::read_file(picture);
  for (const char* tick : {">N<", ">AY<", ">F<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_TRUE(fails_with("--load " + model + " --predict 'N AY Q'", "unknown phoneme 'Q'"));

  const std::string lexicon = ag::testing::scratch_file("translate_cli", "backwards.dict");
  std::ofstream(lexicon) << "knight N AY T\nnight N AY T\n";
  const ProgramRun lines = run("--load " + model + " --predict 'N AY T' 'K Y UW' --nbest 2 " +
                               "--lexicon " + lexicon + " --show-source");
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_EQ(lines.out.rfind("N AY T\t1\t0.5\tknight\tlexicon\nN AY T\t2\t0.5\tnight\tlexicon\n"
                            "K Y UW\t1\t",
                            0),
            0u)
      << lines.out;

  const ProgramRun scored = run("--load " + model + " --evaluate " + sample + " --stats");
  ASSERT_EQ(scored.exit_code, 0) << scored.err;
  EXPECT_NE(scored.err.find(sample + ": 300 pronunciations, word accuracy "), std::string::npos)
      << scored.err;
  EXPECT_NE(scored.out.find("\neval_letter_error_rate "), std::string::npos) << scored.out;
}

// --load twice: the two shipped g2p models as an ensemble, which pronounces,
// scores a dictionary, and gives the n best with posteriors as one model.
TEST(TranslateCli, AnEnsembleOfShippedModels) {
  const std::string both =
      "--load " + ag::testing::source_path("translate/models/g2p-cmudict.npz") + " --load " +
      ag::testing::source_path("translate/models/g2p-cmudict-multihead.npz");
  const ProgramRun predicted = run(both + " --predict knife psychology");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  EXPECT_NE(predicted.out.find("N AY F"), std::string::npos) << predicted.out;
  const std::string sample = ag::testing::source_path("tests/data/cmudict-sample.dict");
  const ProgramRun evaluated = run(both + " --evaluate " + sample);
  ASSERT_EQ(evaluated.exit_code, 0) << evaluated.err;
  EXPECT_NE(evaluated.err.find("278 words, WER"), std::string::npos) << evaluated.err;
  const std::string words = ag::testing::scratch_file("translate_cli", "ensemble.words");
  std::ofstream(words) << "knife\nqueue\n";
  const ProgramRun nbest = run(both + " --predict-file " + words + " --nbest 3");
  ASSERT_EQ(nbest.exit_code, 0) << nbest.err;
  EXPECT_NE(nbest.out.find("knife\t1\t"), std::string::npos) << nbest.out;
  EXPECT_NE(nbest.out.find("queue\t3\t"), std::string::npos) << nbest.out;
}

TEST(TranslateCli, Help) {
  const ProgramRun r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag :
       {"--task", "--model", "--attention", "--steps", "--batch", "--seed", "--threads", "--save",
        "--load", "--predict", "--heatmap", "--json", "--heads", "--ffn", "--blocks",
        "--no-causal-mask", "--dict", "--predict-file", "--evaluate"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
}

}  // namespace
