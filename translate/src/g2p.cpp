// The g2p task (letters to sounds) on CMUdict: its entry in the task table
// (tasks.h). The dictionary's reader, split, examples and scorer are
// cmudict.h's.
#include <string>
#include <vector>

#include "attograd/translate/cmudict.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

Task g2p_task() {
  Task task;
  task.format = {"g2p", Tokenization::Characters, Tokenization::Phonemes};
  task.summary = "g2p: a word's pronunciation, \"knife\" -> \"N AY F\" (CMUdict)";
  task.data = [](const DatasetOptions& o) { return cmudict_data(o.dict_path); };
  task.defaults = [](const std::string& model) {
    // The shipped model's recipe (docs/g2p.md, "The shipped model"):
    // Bahdanau et al.'s encoder, two GRU layers of 256, batches of 128 cut to
    // their longest word, half a cosine from 1.5e-3, dropout 0.1. Its choices
    // were made on the dev split: from 3e-3 the dev WER stalled near 42%
    // while the rate stayed high, from half of it it did not; dropout 0.2 and
    // 0.3 did worse on dev, 0 no better. Without the shipped run's label
    // smoothing and checkpoint averaging (d2l's loss), and the steps cut to
    // what fits in 20 minutes on two threads (5.5 steps/s and 11 s per dev
    // evaluation, measured): 16.6 minutes on a quiet machine. Each run scored
    // the test words once, at its end; nothing was chosen on them.
    TaskDefaults d = d2l_task_defaults(model);
    d.config.encoder = "bidirectional";
    d.config.embed_size = 128;
    d.config.num_hiddens = 256;
    d.config.num_layers = 2;
    d.config.dropout = 0.1;
    d.batch = 128;
    d.lr = 0.0015;
    d.lr_schedule = "cosine";
    d.steps = 5500;
    d.eval_every = 1000;
    return d;
  };
  task.check = [](const TaskOptions& o) { check_dictionary_options("g2p", o); };
  // WER and PER as G2P papers score them (score_pronunciations, cmudict.h).
  task.figures = [](const std::vector<Example>&, const std::vector<Translation>&,
                    const Evaluation& scored) {
    const PronunciationScores p = pronunciation_scores(scored);
    return std::vector<Figure>{
        {"words", std::to_string(p.words) + " words", static_cast<double>(p.words)},
        percent_figure("wer", "WER", p.wer),
        percent_figure("per", "PER", p.per,
                       std::to_string(p.edits) + " edits / " +
                           std::to_string(p.reference_phonemes) + " phonemes")};
  };
  task.headline = "wer";
  task.read_input = normalize_word;
  task.dictionary_examples = cmudict_examples;
  task.lexicon = [](const Cmudict& dict) {
    Lexicon lexicon;
    for (const CmudictEntry& entry : dict.entries) lexicon[entry.word] = entry.pronunciations;
    return lexicon;
  };
  return task;
}

}  // namespace ag::translate
