// Training (see train.h).
#include "attograd/translate/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <numbers>
#include <sstream>

#include "attograd/attograd.h"
#include "one_kernel_thread.h"

#if ATTOGRAD_HAS_THREADS
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>
#endif

namespace ag::translate {

namespace {

void check_same_data(const Translator& translator, const Dataset& data) {
  AG_CHECK(translator.model != nullptr, "train_seq2seq", "the translator has no model");
  AG_CHECK(translator.src_vocab.idx_to_token() == data.src_vocab().idx_to_token() &&
               translator.tgt_vocab.idx_to_token() == data.tgt_vocab().idx_to_token() &&
               translator.src_steps == data.src_steps() && translator.tgt_steps == data.tgt_steps(),
           "train_seq2seq",
           "the model's vocabularies or step counts are not the data's (model for task '" +
               translator.task.name + "', data of task '" + data.task().name + "')");
}

// ---- data parallelism ------------------------------------------------------------

// The batch's rows `rows`, in that order.
Batch rows_of(const Batch& batch, const std::vector<int64_t>& rows) {
  const Tensor index = ag::tensor(std::vector<double>(rows.begin(), rows.end()),
                                  {static_cast<int64_t>(rows.size())}, kInt64);
  return {batch.src.index_select(0, index), batch.src_valid_len.index_select(0, index),
          batch.tgt.index_select(0, index), batch.tgt_valid_len.index_select(0, index)};
}

// A seed for each shard's dropout from one draw per step (SplitMix64's
// finaliser over base + shard * golden ratio: neighbouring shards get
// unrelated seeds).
uint64_t shard_seed(uint64_t base, int64_t shard) {
  uint64_t z = base + static_cast<uint64_t>(shard + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Writes `from`'s values into `to` (the same model's parameters, in the same
// order and dtype), in place as load_state_dict does.
void copy_values(const std::vector<Tensor>& from, const std::vector<Tensor>& to) {
  for (size_t i = 0; i < from.size(); ++i) {
    dispatch_floating(to[i].dtype(), "train_seq2seq", [&](auto tag) {
      using T = decltype(tag);
      std::copy_n(from[i].data_ptr<T>(), from[i].numel(), to[i].data_ptr<T>());
    });
    to[i].impl()->storage()->bump_version();  // graphs recorded before are stale
  }
}

}  // namespace

// The replicas and worker threads of data-parallel training. Shard 0 runs on
// the calling thread with the trainer's own model; shard k >= 1 on worker
// thread k with replica k, a model of the same config whose parameters are
// overwritten with the model's before each step. Copying (rather than
// pointing the replicas at the model's storage) costs one pass over the
// parameters per replica and step — about 0.1 MB for d2l's sizes, a few
// microseconds against a step of milliseconds — and keeps every replica an
// ordinary module: its parameters are leaves with gradients of their own, and
// nothing is shared between threads but read-only values. The workers live as
// long as the trainer and sleep between steps. In a build without threads
// (WebAssembly) the shards run one after the other on the calling thread:
// the same numbers, no speed-up.
class Seq2SeqTrainer::DataParallel {
 public:
  DataParallel(const Translator& translator, const std::vector<Tensor>& params, int64_t shards)
      : shards_(shards) {
    // The replicas' initial values are overwritten before they are used:
    // none are drawn, and the global generator stays where one-thread
    // training leaves it.
    SkipDrawsGuard no_draws;
    for (int64_t k = 1; k < shards; ++k) {
      replicas_.push_back(
          make_model(translator.config, translator.src_vocab.size(), translator.tgt_vocab.size()));
      replicas_.back()->to(params.at(0).dtype());
      replica_params_.push_back(replicas_.back()->parameters());
      const std::vector<Tensor>& copy = replica_params_.back();
      bool same = copy.size() == params.size();
      for (size_t i = 0; same && i < params.size(); ++i)
        same = copy[i].shape() == params[i].shape() && copy[i].dtype() == params[i].dtype() &&
               params[i].is_contiguous() && copy[i].is_contiguous();
      AG_CHECK(same, "train_seq2seq",
               "a new '" + translator.config.model +
                   "' model from the translator's config does not have the translator's "
                   "parameters (changed since it was made?)");
    }
    // Thread k's share of the parameters: those whose first element falls
    // in the k-th of `shards` equal parts of all their elements.
    int64_t total = 0, before = 0;
    for (const Tensor& p : params) total += p.numel();
    share_begin_.assign(static_cast<size_t>(shards) + 1, params.size());
    share_begin_[0] = 0;
    for (size_t i = 0, k = 1; i < params.size(); before += params[i++].numel())
      for (; k < static_cast<size_t>(shards) && before * shards >= total * static_cast<int64_t>(k);
           ++k)
        share_begin_[k] = i;
#if ATTOGRAD_HAS_THREADS
    errors_.resize(static_cast<size_t>(shards));
    try {
      for (int64_t k = 1; k < shards; ++k) workers_.emplace_back([this, k] { work(k); });
    } catch (const std::system_error& e) {
      stop();
      throw Error("train_seq2seq: cannot start " + std::to_string(shards - 1) +
                  " worker threads: " + e.what());
    }
#endif
  }
  ~DataParallel() {
    stop();
  }
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  int64_t shards() const {
    return shards_;
  }
  nn::EncoderDecoder& replica(int64_t shard) {
    return *replicas_[static_cast<size_t>(shard - 1)];
  }
  const std::vector<Tensor>& replica_params(int64_t shard) const {
    return replica_params_[static_cast<size_t>(shard - 1)];
  }
  // Parameters [first, second) are thread `thread`'s to sum after the shards.
  std::pair<size_t, size_t> parameter_share(int64_t thread) const {
    return {share_begin_[static_cast<size_t>(thread)],
            share_begin_[static_cast<size_t>(thread) + 1]};
  }

  // Runs job(k) for every shard k, all at once (job(0) on the calling
  // thread), and returns when every one has finished; then rethrows the
  // first shard's exception, if any.
  void run(const std::function<void(int64_t)>& job) {
#if ATTOGRAD_HAS_THREADS
    {
      std::lock_guard<std::mutex> lock(mutex_);
      job_ = &job;
      pending_ = shards_ - 1;
      std::fill(errors_.begin(), errors_.end(), nullptr);
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr error;
    try {
      job(0);
    } catch (...) {
      error = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
    errors_[0] = error;
    for (const std::exception_ptr& e : errors_)
      if (e) std::rethrow_exception(e);
#else
    for (int64_t k = 0; k < shards_; ++k) job(k);
#endif
  }

 private:
  int64_t shards_;
  std::vector<std::unique_ptr<nn::EncoderDecoder>> replicas_;  // shards 1 .. shards - 1
  std::vector<size_t> share_begin_;  // parameter_share(k) = [share_begin_[k], share_begin_[k + 1])
  std::vector<std::vector<Tensor>> replica_params_;
#if ATTOGRAD_HAS_THREADS
  void work(int64_t shard) {
    uint64_t seen = 0;  // the workers start before the first job
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      const std::function<void(int64_t)>& job = *job_;
      lock.unlock();
      std::exception_ptr error;
      try {
        job(shard);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      errors_[static_cast<size_t>(shard)] = error;
      if (--pending_ == 0) done_.notify_one();
    }
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  std::vector<std::thread> workers_;
  std::mutex mutex_;  // guards everything below
  std::condition_variable wake_, done_;
  uint64_t generation_ = 0;  // bumped once per job
  bool stopping_ = false;
  const std::function<void(int64_t)>* job_ = nullptr;
  int64_t pending_ = 0;                     // worker shards not finished yet
  std::vector<std::exception_ptr> errors_;  // per shard
#else
  void stop() {}
#endif
};

Seq2SeqTrainer::Seq2SeqTrainer(Translator& translator, const Dataset& data,
                               const TrainOptions& options)
    : model_((check_same_data(translator, data), *translator.model)),
      data_(data),
      options_(options),
      params_(model_.parameters()),
      batches_(data, options.batch_size, options.seed),
      bos_(full({options.batch_size, 1}, static_cast<double>(Vocab::kBos), kInt64)),
      trim_(skips_padding(translator.config)) {
  AG_CHECK(options.steps >= 0 && options.lr > 0 && options.max_grad_norm > 0, "train_seq2seq",
           "need steps >= 0, lr > 0 and max_grad_norm > 0, got " + std::to_string(options.steps) +
               ", " + std::to_string(options.lr) + ", " + std::to_string(options.max_grad_norm));
  AG_CHECK(options.threads >= 1 && options.threads <= options.batch_size, "train_seq2seq",
           "threads " + std::to_string(options.threads) + " must be in [1, batch size " +
               std::to_string(options.batch_size) +
               "]: each thread trains on a shard of the batch");
  AG_CHECK(options.label_smoothing >= 0 && options.label_smoothing <= 1, "train_seq2seq",
           "label_smoothing must be in [0, 1], got " + number_str(options.label_smoothing));
  AG_CHECK(options.warmup_steps >= 0 && (!options.cosine_lr || options.warmup_steps == 0 ||
                                         options.warmup_steps < options.steps),
           "train_seq2seq",
           "warmup_steps must be >= 0, and below steps with cosine_lr (the cosine needs steps "
           "after the warm-up), got warmup_steps " +
               std::to_string(options.warmup_steps) + ", steps " + std::to_string(options.steps));
  optimizer_ = std::make_unique<optim::Adam>(params_, options_.lr);
  if (options.threads > 1)
    parallel_ = std::make_unique<DataParallel>(translator, params_, options.threads);
}

Seq2SeqTrainer::~Seq2SeqTrainer() = default;

void Seq2SeqTrainer::set_learning_rate(double lr) {
  AG_CHECK(lr > 0, "Seq2SeqTrainer::set_learning_rate", "need lr > 0, got " + std::to_string(lr));
  options_.lr = lr;
  optimizer_ = std::make_unique<optim::Adam>(params_, lr);
}

Tensor Seq2SeqTrainer::summed_loss(nn::EncoderDecoder& model, const Batch& batch,
                                   double* tokens) const {
  Tensor src = batch.src, tgt = batch.tgt;
  if (trim_) {
    // The batch's longest source and target: the steps beyond are padding
    // for every row. The bidirectional encoder skips padding (packed) and the
    // decoder is causal, so cutting them changes no logit of a valid step;
    // it only spares the GRUs and the attention those steps (CMUdict's pairs
    // average 8 characters against 29 steps).
    src = cut_padding(src, batch.src_valid_len);
    tgt = cut_padding(tgt, batch.tgt_valid_len);
  }
  const int64_t Tt = tgt.size(1);
  // Teacher forcing: step t reads the true token t - 1 (<bos> at t = 0).
  const Tensor dec_input = cat({bos_.narrow(0, 0, tgt.size(0)), tgt.narrow(1, 0, Tt - 1)}, 1);
  const Tensor logits = model(src, dec_input, batch.src_valid_len);  // [B, Tt, V]
  Tensor loss =
      nn::masked_softmax_ce_loss(logits, tgt, batch.tgt_valid_len, options_.label_smoothing)
          .sum();  // sum of [B]
  // d2l's loss is each row's mean over all tgt_steps (padding counting as 0):
  // rescaled from the Tt steps kept, the objective is the untrimmed one.
  if (Tt != data_.tgt_steps())
    loss = loss * (static_cast<double>(Tt) / static_cast<double>(data_.tgt_steps()));
  *tokens = batch.tgt_valid_len.sum().item();
  return loss;
}

double Seq2SeqTrainer::step() {
  model_.train();
  model_.set_need_weights(false);  // training shows nothing: stream where the model can
  const Batch batch = batches_.next();
  optimizer_->zero_grad();
  double tokens = 0;
  const std::vector<std::vector<int64_t>> parts = batch_parts(batch);
  const double total = parallel_ ? parallel_step(batch, parts, &tokens)
                                 : train_parts(model_, batch, parts, 0, 1, &tokens);
  nn::clip_grad_norm_(params_, options_.max_grad_norm);
  // (a constant rate is Adam's own, set at construction or set_learning_rate)
  if (options_.cosine_lr || options_.warmup_steps > 0)
    optimizer_->set_lr(scheduled_lr(options_, steps_taken_ + 1));
  optimizer_->step();
  ++steps_taken_;
  // d2l reports the summed loss per target token; each row of `loss` is
  // already a mean over tgt_steps, so multiply back.
  return total * static_cast<double>(data_.tgt_steps()) / tokens;
}

// The loss is summed over the batch's rows (d2l's l.sum().backward(); the
// division by the token count is only for the reported figure), so the
// gradient of the whole batch is the sum of its parts' gradients of their
// own summed losses: no scaling.
double Seq2SeqTrainer::train_parts(nn::EncoderDecoder& model, const Batch& batch,
                                   const std::vector<std::vector<int64_t>>& parts, size_t first,
                                   size_t stride, double* tokens) const {
  double total = 0;
  for (size_t p = first; p < parts.size(); p += stride) {
    const bool whole = parts[p].size() == static_cast<size_t>(batch.src.size(0));
    double part_tokens = 0;
    const Tensor loss = summed_loss(model, whole ? batch : rows_of(batch, parts[p]), &part_tokens);
    loss.backward();  // summed into the parameters' gradients
    total += loss.item();
    *tokens += part_tokens;
  }
  return total;
}

std::vector<std::vector<int64_t>> Seq2SeqTrainer::batch_parts(const Batch& batch) const {
  const int64_t rows = batch.src.size(0);
  const int64_t threads = parallel_ ? parallel_->shards() : 1;
  if (!trim_) {  // every row runs every step: one part per thread, as equal as can be
    std::vector<std::vector<int64_t>> parts(static_cast<size_t>(threads));
    for (int64_t k = 0; k < threads; ++k)
      for (int64_t r = rows * k / threads; r < rows * (k + 1) / threads; ++r)
        parts[static_cast<size_t>(k)].push_back(r);
    return parts;
  }
  std::vector<int64_t> src_len, tgt_len;
  for (const double v : batch.src_valid_len.to_vector()) src_len.push_back(static_cast<int64_t>(v));
  for (const double v : batch.tgt_valid_len.to_vector()) tgt_len.push_back(static_cast<int64_t>(v));
  return length_parts(src_len, tgt_len, std::min(rows, std::max(kLengthParts, threads)));
}

double Seq2SeqTrainer::parallel_step(const Batch& batch,
                                     const std::vector<std::vector<int64_t>>& parts,
                                     double* tokens) {
  DataParallel& parallel = *parallel_;
  const int64_t shards = parallel.shards();
  const uint64_t dropout_seed = random_u64();  // one global draw per step, on this thread
  std::vector<double> shard_total(static_cast<size_t>(shards)),
      shard_tokens(static_cast<size_t>(shards));
  {
    OneKernelThread one_kernel_thread;
    parallel.run([&](int64_t k) {
      nn::EncoderDecoder& model = k == 0 ? model_ : parallel.replica(k);
      if (k > 0) {
        model.train(model_.is_training());
        model.set_need_weights(false);  // as step() set the model's
        copy_values(params_, parallel.replica_params(k));
        model.zero_grad();
      }
      ThreadGenerator generator(shard_seed(dropout_seed, k));
      const auto shard = static_cast<size_t>(k);  // part k (batch_parts: one per thread)
      shard_total[shard] = train_parts(model, batch, parts, shard, static_cast<size_t>(shards),
                                       &shard_tokens[shard]);
    });
  }
  // grad = shard 0's + shard 1's + ... in shard order (a fixed order: the
  // same T gives the same sums), each thread summing a share of the
  // parameters (about 1/T of their elements): done by this thread alone, the
  // sums of a 3M-parameter model took as long as Adam's step.
  parallel.run([&](int64_t thread) {
    NoGradGuard no_grad;
    const auto [begin, end] = parallel.parameter_share(thread);
    for (size_t i = begin; i < end; ++i) {
      Tensor grad = params_[i].grad();
      for (int64_t k = 1; k < shards; ++k) {
        const Tensor g = parallel.replica_params(k)[i].grad();
        if (g.defined()) grad = grad.defined() ? grad + g : g.clone();
      }
      params_[i].set_grad(grad);
    }
  });
  double total = 0;
  *tokens = 0;
  for (int64_t k = 0; k < shards; ++k) {
    total += shard_total[static_cast<size_t>(k)];
    *tokens += shard_tokens[static_cast<size_t>(k)];
  }
  return total;
}

double Seq2SeqTrainer::next_loss() const {
  BatchIterator upcoming = batches_;  // a copy: the next step still gets this batch
  NoGradGuard no_grad;
  double tokens = 0;
  return summed_loss(model_, upcoming.next(), &tokens).item() *
         static_cast<double>(data_.tgt_steps()) / tokens;
}

std::vector<std::vector<int64_t>> length_parts(const std::vector<int64_t>& src_len,
                                               const std::vector<int64_t>& tgt_len, int64_t parts) {
  const auto n = static_cast<int64_t>(src_len.size());
  AG_CHECK(tgt_len.size() == src_len.size() && parts >= 1 && parts <= n, "length_parts",
           std::to_string(src_len.size()) + " source and " + std::to_string(tgt_len.size()) +
               " target lengths for " + std::to_string(parts) +
               " parts: expected as many of each, and 1 <= parts <= rows");
  // The rows, longest first (source + target; ties in batch order).
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  const auto length = [&](int64_t row) {
    return src_len[static_cast<size_t>(row)] + tgt_len[static_cast<size_t>(row)];
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return length(a) > length(b); });
  // least[s][i]: the least largest work of cutting the first i rows into s
  // runs, each at least one row, where a run's work is its rows times its
  // longest source plus its longest target; cut[s][i]: where its last run
  // starts. The last run, order[j .. i), grows a row at a time from i - 1
  // down, its longest lengths kept as it grows.
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  const auto size = static_cast<size_t>(n + 1);
  std::vector<std::vector<int64_t>> least(static_cast<size_t>(parts) + 1,
                                          std::vector<int64_t>(size, kNone)),
      cut(static_cast<size_t>(parts) + 1, std::vector<int64_t>(size, 0));
  least[0][0] = 0;
  for (int64_t s = 1; s <= parts; ++s)
    for (int64_t i = s; i <= n - (parts - s); ++i) {
      int64_t src = 0, tgt = 0;
      for (int64_t j = i - 1; j >= s - 1; --j) {
        const auto row = static_cast<size_t>(order[static_cast<size_t>(j)]);
        src = std::max(src, src_len[row]);
        tgt = std::max(tgt, tgt_len[row]);
        const int64_t before = least[static_cast<size_t>(s - 1)][static_cast<size_t>(j)];
        if (before == kNone) continue;
        const int64_t largest = std::max(before, (i - j) * (src + tgt));
        if (largest < least[static_cast<size_t>(s)][static_cast<size_t>(i)]) {
          least[static_cast<size_t>(s)][static_cast<size_t>(i)] = largest;
          cut[static_cast<size_t>(s)][static_cast<size_t>(i)] = j;
        }
      }
    }
  // The runs from the last back, each part's rows then in batch order.
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(parts));
  for (int64_t s = parts, i = n; s >= 1; --s) {
    const int64_t j = cut[static_cast<size_t>(s)][static_cast<size_t>(i)];
    std::vector<int64_t>& part = rows[static_cast<size_t>(s - 1)];
    part.assign(order.begin() + j, order.begin() + i);
    std::sort(part.begin(), part.end());
    i = j;
  }
  return rows;
}

double scheduled_lr(const TrainOptions& options, int64_t step) {
  AG_CHECK(step >= 1, "scheduled_lr", "steps count from 1, got " + std::to_string(step));
  const double s = static_cast<double>(step), w = static_cast<double>(options.warmup_steps);
  if (options.warmup_steps > 0 && step <= options.warmup_steps)
    return options.lr * (s / w);  // the line up to the peak at step w
  if (options.cosine_lr) {
    AG_CHECK(options.steps > options.warmup_steps, "train_seq2seq",
             "cosine_lr needs the run's length: steps >= 1 after the warm-up, got steps " +
                 std::to_string(options.steps) + ", warmup_steps " +
                 std::to_string(options.warmup_steps));
    // without a warm-up, step 1 is the cosine's top (s - 1 = 0); after one,
    // step w is (s - w = 0)
    const double into = options.warmup_steps > 0 ? s - w : s - 1;
    return options.lr * 0.5 *
           (1 + std::cos(std::numbers::pi * into /
                         static_cast<double>(options.steps - options.warmup_steps)));
  }
  if (options.warmup_steps > 0)
    return options.lr * std::sqrt(w / s);  // lr min(s / w, sqrt(w / s)) after the line
  return options.lr;
}

double train_seq2seq(Translator& translator, const Dataset& data, const TrainOptions& options,
                     const StepCallback& on_step) {
  Seq2SeqTrainer trainer(translator, data, options);
  const auto start = std::chrono::steady_clock::now();
  double last_loss = std::numeric_limits<double>::quiet_NaN();
  double callback_seconds = 0;  // left out of StepInfo::seconds
  for (int64_t step = 1; step <= options.steps; ++step) {
    last_loss = trainer.step();
    if (on_step) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - start).count() - callback_seconds;
      on_step({step, options.steps, last_loss, seconds});
      callback_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - now).count();
    }
  }
  return last_loss;
}

namespace {

// A copy of the model's state dict as it is now (the entries cloned, so
// that training on does not change it): a checkpoint in memory.
std::map<std::string, Tensor> state_copy(const nn::Module& model) {
  NoGradGuard no_grad;
  std::map<std::string, Tensor> copy;
  for (const auto& [name, value] : model.state_dict()) copy[name] = value.clone();
  return copy;
}

}  // namespace

BestParameters::BestParameters(nn::Module& model) : model_(model) {}

bool BestParameters::offer(double score, int64_t step) {
  if (step_ >= 0 && !(score < score_)) return false;
  best_ = state_copy(model_);
  score_ = score;
  step_ = step;
  return true;
}

void BestParameters::restore() const {
  AG_CHECK(step_ >= 0, "BestParameters::restore", "no parameters were kept (offer() never ran)");
  model_.load_state_dict(best_, /*strict=*/true);
}

CheckpointAverage::CheckpointAverage(nn::Module& model, int64_t count)
    : model_(model), count_(count) {
  AG_CHECK(count >= 1, "CheckpointAverage",
           "needs count >= 1 checkpoints to average, got " + std::to_string(count));
}

void CheckpointAverage::add() {
  snapshots_.push_back(state_copy(model_));
  if (size() > count_) snapshots_.pop_front();
}

void CheckpointAverage::load_into_model() const {
  AG_CHECK(!snapshots_.empty(), "CheckpointAverage::load_into_model",
           "no checkpoints to average (add() never ran)");
  NoGradGuard no_grad;
  // mean = (1/n) sum_k snapshot_k, entry by entry, summed in float64.
  std::map<std::string, Tensor> mean = snapshots_.back();
  for (auto& [name, value] : mean) {
    if (!is_floating(value.dtype())) continue;
    Tensor sum = zeros(value.shape(), kFloat64);
    for (const auto& snapshot : snapshots_) sum = sum + snapshot.at(name).to(kFloat64);
    value = (sum * (1.0 / static_cast<double>(size()))).to(value.dtype());
  }
  model_.load_state_dict(mean, /*strict=*/true);
}

}  // namespace ag::translate
