// Grades exercise 11 (starters/11_scoring_function.cpp): the learner's class
// of nn's table, built by its factory and by name, against loops: its
// parameter, the keys it remembers, its scores, the attention it gives
// through the base class, its gradients (gradcheck through the queries, keys,
// values and W_a), and a seq2seq model that reads it from the table.
#include <attograd/nn/seq2seq.h>

#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#ifdef ATTOGRAD_EXERCISE_VIEWER
#include <attograd/viewer.h>
#endif

#include "exercises.h"
#include "grader.h"

namespace {

constexpr int64_t B = 2, Tq = 3, Tk = 5, Q = 3, K = 4, V = 2;

// x [n, m] as row-major values, one entry per index pair.
double at(const std::vector<double>& x, int64_t row, int64_t col, int64_t cols) {
  return x[static_cast<size_t>(row * cols + col)];
}

// k' = k W_a^T by loops: [B, Tk, K] -> [B, Tk, Q].
ag::Tensor projected_keys(const ag::Tensor& k, const ag::Tensor& W_a) {
  const std::vector<double> kv = ex::values(k), wv = ex::values(W_a);
  std::vector<double> out;
  for (int64_t r = 0; r < B * Tk; ++r)
    for (int64_t i = 0; i < Q; ++i) {
      double s = 0;
      for (int64_t j = 0; j < K; ++j) s += at(wv, i, j, K) * at(kv, r, j, K);
      out.push_back(s);
    }
  return ag::tensor(out, {B, Tk, Q}, ag::kFloat64);
}

// scores[b, i, j] = q[b, i] . k'[b, j] by loops: [B, Tq, Tk].
ag::Tensor scores_by_hand(const ag::Tensor& q, const ag::Tensor& k, const ag::Tensor& W_a) {
  const std::vector<double> qv = ex::values(q), pv = ex::values(projected_keys(k, W_a));
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i)
      for (int64_t j = 0; j < Tk; ++j) {
        double s = 0;
        for (int64_t x = 0; x < Q; ++x) s += at(qv, b * Tq + i, x, Q) * at(pv, b * Tk + j, x, Q);
        out.push_back(s);
      }
  return ag::tensor(out, {B, Tq, Tk}, ag::kFloat64);
}

// softmax over the first lengths[b] keys, the others weigh 0, then the
// values: [B, Tq, V].
ag::Tensor attention_by_hand(const ag::Tensor& scores, const ag::Tensor& v,
                             const std::vector<int64_t>& lengths) {
  const std::vector<double> sv = ex::values(scores), vv = ex::values(v);
  std::vector<double> out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Tq; ++i) {
      double top = -INFINITY, total = 0;
      for (int64_t j = 0; j < lengths[b]; ++j) top = std::max(top, at(sv, b * Tq + i, j, Tk));
      std::vector<double> w(static_cast<size_t>(Tk), 0.0);
      for (int64_t j = 0; j < lengths[b]; ++j)
        total += w[j] = std::exp(at(sv, b * Tq + i, j, Tk) - top);
      for (int64_t x = 0; x < V; ++x) {
        double s = 0;
        for (int64_t j = 0; j < Tk; ++j) s += w[j] / total * at(vv, b * Tk + j, x, V);
        out.push_back(s);
      }
    }
  return ag::tensor(out, {B, Tq, V}, ag::kFloat64);
}

}  // namespace

// --viewer (anywhere) [viewer options]: your class registered as my_general,
// then the viewer's compare scene with the library's general beside it (both
// draw W_a from the same seed: right, the two pictures are the same). Every
// other argument is the viewer's.
int open_viewer(int argc, char** argv) {
#ifdef ATTOGRAD_EXERCISE_VIEWER
  ag::nn::register_scoring_function({"my_general", "q^T W_a k (exercise 11)", ex::make_my_scoring});
  std::vector<std::string> args = {"--scene", "compare", "--set",
                                   "compare.scoring=general,my_general"};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) != "--viewer") args.emplace_back(argv[i]);
  }
  return ag::viewer::run_viewer(args);
#else
  (void)argc;
  std::cerr << argv[0] << ": built without the viewer (ATTOGRAD_BUILD_VIEWER=OFF)\n";
  return 2;
#endif
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--viewer") return open_viewer(argc, argv);
  }
  ex::Grader g(11, "your own scoring function, a class of nn's table",
               "nn/src/scoring_general.cpp (GeneralScoring)");
  const ag::nn::ScoringSizes sizes{.query_size = Q, .key_size = K};
  const ag::Tensor q = ex::uniform({B, Tq, Q}, 110), k = ex::uniform({B, Tk, K}, 111);
  const ag::Tensor v = ex::uniform({B, Tk, V}, 112), W_a = ex::uniform({Q, K}, 113);
  const ag::Tensor lens = ag::tensor({5, 2}, {2}, ag::kInt64);

  std::unique_ptr<ag::nn::ScoringFunction> made;
  const std::string parameter_hint =
      "Linear W_a(sizes.key_size, sizes.query_size, false), then register_module(\"W_a\", &W_a) "
      "in the constructor";
  std::function<bool()> build = [&] {
    made = ex::make_my_scoring(sizes);
    if (made) made->to(ag::kFloat64);
    return made != nullptr;
  };
  bool built = false;
  if (g.run("make_my_scoring for q = 3, k = 4", build, built,
            "return std::make_unique<...>(sizes)"))
    g.require("make_my_scoring for q = 3, k = 4", built, "it returned nullptr",
              "return std::make_unique<YourClass>(sizes)");
  const auto names = built ? made->state_dict() : ag::nn::StateDict();
  g.require("its one parameter: W_a.weight [3, 4]",
            built && names.size() == 1 && names.count("W_a.weight") == 1 &&
                names.at("W_a.weight").shape() == ag::Shape{Q, K},
            built ? "its state dict has " + std::to_string(names.size()) + " entries" +
                        (names.count("W_a.weight")
                             ? " (W_a.weight " + ag::shape_str(names.at("W_a.weight").shape()) + ")"
                             : ", and no W_a.weight")
                  : "nothing was built",
            parameter_hint);
  const auto use = [&](const std::function<ag::Tensor(ag::nn::ScoringFunction&)>& f) {
    return [&, f] {
      if (!built) throw ag::Error("make_my_scoring built nothing");
      made->load_state_dict({{"W_a.weight", W_a}});
      return f(*made);
    };
  };
  g.close("remember: the keys once per source, k W_a^T",
          use([&](ag::nn::ScoringFunction& s) { return s.remember(k, v).keys; }),
          projected_keys(k, W_a), 1e-12,
          "remember_keys(keys) returns W_a(keys): [B, Tk, k] -> [B, Tk, q]");
  const ag::Tensor scores = scores_by_hand(q, k, W_a);
  g.close("scores: q^T W_a k for every query and key",
          use([&](ag::nn::ScoringFunction& s) { return s.scores(q, s.remember(k, v)); }), scores,
          1e-12,
          "score(queries, keys) is bmm(queries, transpose(keys, 1, 2)) on the remembered keys");
  g.close("attend with lengths [5, 2]: the base class's softmax and values' product",
          use([&](ag::nn::ScoringFunction& s) { return s.attend(q, s.remember(k, v), lens); }),
          attention_by_hand(scores, v, {5, 2}), 1e-12,
          "score() returns the raw scores [B, Tq, Tk]: no softmax of its own, no mask");
  g.gradcheck(
      "gradcheck through q, k, v and W_a",
      [&](const std::vector<ag::Tensor>& in) {
        if (!built) throw ag::Error("make_my_scoring built nothing");
        made->parameter("W_a.weight") = in[3];
        return made->attend(in[0], made->remember(in[1], in[2]), lens);
      },
      {ex::uniform({B, Tq, Q}, 114).requires_grad_(), ex::uniform({B, Tk, K}, 115).requires_grad_(),
       ex::uniform({B, Tk, V}, 116).requires_grad_(), ex::uniform({Q, K}, 117).requires_grad_()},
      parameter_hint + "; the scores from ag ops only (bmm, transpose), so autograd follows them");

  // By name: the table builds it for a seq2seq decoder (queries: the
  // decoder's 8 hidden units; keys: the bidirectional encoder's 2 x 8).
  ag::nn::register_scoring_function({"my_general", "q^T W_a k (exercise 11)", ex::make_my_scoring});
  ag::nn::StateDict by_name;
  std::function<ag::nn::StateDict()> make_by_name = [&] {
    return ag::nn::make_scoring_function("my_general", {.query_size = 8, .key_size = 16})
        ->state_dict();
  };
  if (g.run("registered as my_general and built by name for q = 8, k = 16", make_by_name, by_name,
            "make_my_scoring is the factory the table calls"))
    g.require(
        "registered as my_general and built by name for q = 8, k = 16",
        by_name.count("W_a.weight") == 1 && by_name.at("W_a.weight").shape() == ag::Shape{8, 16},
        "its state dict has " + std::to_string(by_name.size()) + " entries", parameter_hint);
  std::function<ag::Tensor()> translate = [&] {
    ag::manual_seed(118);
    auto net = ag::nn::make_bahdanau_seq2seq(7, 6, 4, 8, 1, 0.0, "my_general", true);
    const ag::nn::StateDict state = net->state_dict();
    AG_CHECK(state.count("decoder.attention.W_a.weight") == 1, "exercise 11",
             "the model's state dict has no decoder.attention.W_a.weight");
    const ag::Tensor src = ag::tensor({1, 2, 3, 4, 2, 3, 1, 1}, {2, 4}, ag::kInt64);
    const ag::Tensor tgt = ag::tensor({1, 2, 3, 2, 1, 5}, {2, 3}, ag::kInt64);
    return (*net)(src, tgt, ag::tensor({4, 2}, {2}, ag::kInt64));
  };
  ag::Tensor logits;
  if (g.run("a seq2seq decoder built with it by name", translate, logits,
            "the table calls make_my_scoring(sizes) with the decoder's sizes: use sizes.key_size "
            "and sizes.query_size, not numbers of your own"))
    g.require("a seq2seq decoder built with it by name",
              logits.shape() == ag::Shape{2, 3, 6} && std::isfinite(ag::sum(logits).item()),
              "logits " + ag::shape_str(logits.shape()), "score() returns [B, Tq, Tk]");
  return g.finish();
}
