// The Pronouncer (pronouncer.h): a lexicon first, the model for the rest,
// the model's words decoded in batches of similar length.
#include "attograd/translate/pronouncer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <numeric>
#if ATTOGRAD_HAS_THREADS
#include <thread>
#endif

#include "attograd/attograd.h"
#include "attograd/translate/ensemble.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/tasks.h"
#include "one_kernel_thread.h"

namespace ag::translate {

namespace {

// The variants' posteriors: exp(log_prob) renormalised over them (the
// largest log P subtracted first, so that no exp underflows to 0 / 0).
void set_posteriors(std::vector<PronunciationVariant>& variants) {
  double best = -INFINITY;
  for (const PronunciationVariant& v : variants) best = std::max(best, v.log_prob);
  double total = 0;
  for (const PronunciationVariant& v : variants) total += std::exp(v.log_prob - best);
  for (PronunciationVariant& v : variants) v.posterior = std::exp(v.log_prob - best) / total;
}

// The fewest leading variants whose posteriors sum to at least pmass.
void keep_mass(std::vector<PronunciationVariant>& variants, double pmass) {
  double mass = 0;
  size_t keep = 0;
  while (keep < variants.size() && mass < pmass) mass += variants[keep++].posterior;
  variants.resize(std::max<size_t>(keep, 1));
}

// A model's variant from one decoded candidate: its phonemes and the
// probabilities of its steps.
PronunciationVariant model_variant(std::string phonemes, std::vector<std::string> output_tokens,
                                   bool finished, double log_prob, double score,
                                   const std::vector<double>& token_log_probs, Tensor alignment) {
  PronunciationVariant v;
  v.phonemes = std::move(phonemes);
  v.output_tokens = std::move(output_tokens);
  v.finished = finished;
  v.log_prob = log_prob;
  v.confidence = std::exp(log_prob);
  v.score = score;
  const size_t phonemes_count = token_log_probs.size() - (finished ? 1 : 0);
  for (size_t t = 0; t < phonemes_count; ++t)
    v.phoneme_probs.push_back(std::exp(token_log_probs[t]));
  v.end_prob = finished ? std::exp(token_log_probs.back()) : 0.0;
  v.alignment = std::move(alignment);
  return v;
}

#if ATTOGRAD_HAS_THREADS
// A model of the same config holding `t`'s parameter values (its own
// storage: each thread runs a module of its own, whose forward keeps
// per-call state such as the alignment).
Translator replica_of(const Translator& t) {
  Translator copy;
  copy.config = t.config;
  copy.task = t.task;
  copy.src_vocab = t.src_vocab;
  copy.tgt_vocab = t.tgt_vocab;
  copy.src_steps = t.src_steps;
  copy.tgt_steps = t.tgt_steps;
  copy.members = t.members;
  {
    SkipDrawsGuard no_draws;  // every value is loaded next
    copy.model = make_translator_model(t);
  }
  copy.model->to(t.model->parameters().at(0).dtype());
  copy.model->load_state_dict(t.model->state_dict(), /*strict=*/true);
  copy.model->eval();
  return copy;
}

// translate() over `texts` in `batches` batches of batch_size, on `threads`
// threads: each decodes whole batches (the next one not taken) with a model
// of its own and one kernel thread.
std::vector<Translation> decode_side_by_side(Translator& translator,
                                             const std::vector<std::string>& texts,
                                             int64_t batch_size, int64_t beam, size_t batches,
                                             size_t threads) {
  const auto batch = static_cast<size_t>(batch_size);
  std::vector<Translator> replicas;
  for (size_t k = 1; k < threads; ++k) replicas.push_back(replica_of(translator));
  std::vector<std::vector<Translation>> decoded(batches);
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  const auto work = [&](Translator& model) {
    try {
      for (size_t b = next++; b < batches; b = next++) {
        const auto first = texts.begin() + static_cast<int64_t>(b * batch);
        const auto last =
            texts.begin() + static_cast<int64_t>(std::min(texts.size(), (b + 1) * batch));
        decoded[b] = translate(model, std::vector<std::string>(first, last), batch_size, beam);
      }
    } catch (...) {
      const std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = batches;  // the others stop after their batch
    }
  };
  {
    OneKernelThread one_kernel_thread;
    std::vector<std::thread> workers;
    for (Translator& replica : replicas) workers.emplace_back(work, std::ref(replica));
    work(translator);
    for (std::thread& worker : workers) worker.join();
  }
  if (failure) std::rethrow_exception(failure);
  std::vector<Translation> out;
  out.reserve(texts.size());
  for (std::vector<Translation>& part : decoded)
    for (Translation& t : part) out.push_back(std::move(t));
  return out;
}
#endif

// translate() over `texts` in batches of batch_size. With T > 1 kernel
// threads and more than one batch, T threads decode whole batches side by
// side: a batch's products are too small to split well across cores, and
// batches side by side keep every core busy. The same outputs as one thread.
std::vector<Translation> decode_batches(Translator& translator,
                                        const std::vector<std::string>& texts, int64_t batch_size,
                                        int64_t beam) {
#if ATTOGRAD_HAS_THREADS
  const size_t batches =
      (texts.size() + static_cast<size_t>(batch_size) - 1) / static_cast<size_t>(batch_size);
  const size_t threads = std::min(static_cast<size_t>(get_num_threads()), batches);
  if (threads > 1)
    return decode_side_by_side(translator, texts, batch_size, beam, batches, threads);
#endif
  return translate(translator, texts, batch_size, beam);
}

}  // namespace

const char* source_name(PronunciationSource source) {
  return source == PronunciationSource::Lexicon ? "lexicon" : "model";
}

Pronouncer::Pronouncer(const std::string& model_path) : Pronouncer(load_translator(model_path)) {}

Pronouncer::Pronouncer(const std::vector<std::string>& model_paths)
    : Pronouncer(load_ensemble(model_paths)) {}

Pronouncer::Pronouncer(Translator translator) : translator_(std::move(translator)) {
  AG_CHECK(translator_.model != nullptr, "Pronouncer", "the translator has no model");
  task_ = &find_task(translator_.task.name);
}

void Pronouncer::add_lexicon(const std::string& path) {
  add_lexicon(read_cmudict(path));
}

void Pronouncer::add_lexicon(const Cmudict& dict) {
  require_dictionary(*task_, "Pronouncer::add_lexicon");
  for (auto& [source, answers] : task_->lexicon(dict)) lexicon_[source] = std::move(answers);
}

std::string Pronouncer::normalize(const std::string& word) {
  return normalize_word(word);
}

std::string Pronouncer::read(const std::string& text) const {
  return task_->read_input ? task_->read_input(text) : text;
}

std::optional<std::string> Pronouncer::problem(const std::string& word) const {
  if (lexicon_.count(word) > 0) return std::nullopt;
  return source_problem(word, translator_.src_vocab, translator_.src_steps,
                        translator_.task.source);
}

std::vector<Pronunciation> Pronouncer::pronounce(const std::vector<std::string>& words,
                                                 const PronounceOptions& options) {
  const char* op = "Pronouncer::pronounce";
  const int64_t beam = options.beam == 0 ? options.nbest : options.beam;
  AG_CHECK(options.nbest >= 1 && options.nbest <= beam, op,
           "nbest " + std::to_string(options.nbest) + " must be in [1, beam " +
               std::to_string(beam) + "]");
  AG_CHECK(options.pmass > 0 && options.pmass <= 1, op,
           "pmass " + number_str(options.pmass) + " must be in (0, 1]");
  AG_CHECK(options.batch_size >= 1, op,
           "batch_size " + std::to_string(options.batch_size) + " < 1");
  std::vector<Pronunciation> out(words.size());
  std::vector<size_t> by_model;  // the words the lexicon does not list
  for (size_t i = 0; i < words.size(); ++i) {
    Pronunciation& p = out[i];
    p.word = read(words[i]);
    if (const std::optional<std::string> why = problem(p.word)) throw Error(*why);
    const auto listed = lexicon_.find(p.word);
    if (listed == lexicon_.end()) {
      by_model.push_back(i);
      continue;
    }
    p.source = PronunciationSource::Lexicon;
    for (const std::string& phonemes : listed->second) {
      PronunciationVariant v;
      v.phonemes = phonemes;
      v.phoneme_probs.assign(tokenize(phonemes, translator_.task.target).size(), 1.0);
      p.variants.push_back(std::move(v));
    }
    p.variants.resize(std::min(p.variants.size(), static_cast<size_t>(options.nbest)));
    for (PronunciationVariant& v : p.variants)
      v.posterior = 1.0 / static_cast<double>(p.variants.size());
    keep_mass(p.variants, options.pmass);
  }
  // Shortest first: each batch then holds words of about one length, whose
  // encoder reads no padding and whose decoder stops about together.
  std::stable_sort(by_model.begin(), by_model.end(),
                   [&](size_t a, size_t b) { return out[a].word.size() < out[b].word.size(); });
  std::vector<std::string> texts;
  for (size_t i : by_model) texts.push_back(out[i].word);
  if (texts.empty()) return out;
  const std::vector<Translation> translations =
      decode_batches(translator_, texts, options.batch_size, beam);
  for (size_t k = 0; k < by_model.size(); ++k) {
    const Translation& t = translations[k];
    Pronunciation& p = out[by_model[k]];
    p.source_tokens = t.source_tokens;
    if (t.beam.empty()) {  // greedy search
      const double log_prob = t.log_prob();
      const bool finished = !t.output_tokens.empty() && t.output_tokens.back() == "<eos>";
      const double score =
          log_prob / std::pow(static_cast<double>(t.token_log_probs.size()), BeamOptions{}.alpha);
      p.variants.push_back(model_variant(t.output, t.output_tokens, finished, log_prob, score,
                                         t.token_log_probs, t.alignment));
    } else {
      for (const Translation::Candidate& candidate : t.beam)
        p.variants.push_back(model_variant(candidate.output, candidate.output_tokens,
                                           candidate.finished, candidate.log_prob, candidate.score,
                                           candidate.token_log_probs, candidate.alignment));
      // An n-best list comes most probable first (its posteriors descend);
      // one answer is the beam's best, by d2l's length-normalised score.
      if (options.nbest > 1)
        std::stable_sort(p.variants.begin(), p.variants.end(),
                         [](const PronunciationVariant& a, const PronunciationVariant& b) {
                           return a.log_prob > b.log_prob;
                         });
      p.variants.resize(std::min(p.variants.size(), static_cast<size_t>(options.nbest)));
    }
    set_posteriors(p.variants);
    keep_mass(p.variants, options.pmass);
  }
  return out;
}

}  // namespace ag::translate
