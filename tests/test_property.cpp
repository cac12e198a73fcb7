// Property test: random shapes, dtypes, dims, values and mask kinds thrown at
// every public op and module. The only acceptable outcomes are a result or an
// ag::Error; any other exception fails the test, and a crash or undefined
// behaviour fails it under ASan + UBSan (the CI's sanitizer build).
//
// Fixed seed and a bounded count, so the run is reproducible and short: a
// failure message names the iteration, and ATTOGRAD_PROPERTY_ITERATIONS /
// ATTOGRAD_PROPERTY_SEED (environment) rerun it longer or elsewhere.
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <random>

#include "test_util.h"

namespace ag {
namespace {

constexpr uint64_t kDefaultSeed = 20261123;
constexpr int kDefaultIterations = 20000;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 10) : fallback;
}

// Random inputs: mostly small and valid-looking, with a steady share of the
// awkward (size-0 dims, 0-d tensors, wrong dtypes, out-of-range dims,
// non-contiguous views, NaN, infinities, int64 extremes).
class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  int64_t below(int64_t n) { return static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }
  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<size_t>(below(static_cast<int64_t>(items.size())))];
  }

  int64_t size() { return chance(8) ? 0 : (chance(3) ? -1 : 1 + below(3)); }
  int64_t dim_arg(int64_t rank) { return below(2 * rank + 5) - rank - 2; }
  Shape shape(int64_t max_rank = 4) {
    Shape s(static_cast<size_t>(below(max_rank + 1)));
    for (int64_t& d : s) d = chance(8) ? 0 : 1 + below(3);
    return s;
  }
  DType dtype() { return chance(60) ? kFloat32 : pick<DType>({kFloat64, kInt64, kBool}); }
  double value() {
    if (chance(5)) return pick<double>({NAN, INFINITY, -INFINITY, 1e30, -1e30, 0.0});
    return static_cast<double>(below(2001) - 1000) / 250.0;
  }

  Tensor tensor(const Shape& shape, DType dtype) {
    Tensor t = zeros(shape, dtype);
    dispatch_all(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* p = t.data_ptr<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          p[i] = chance(60);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          p[i] = chance(3) ? pick<int64_t>({std::numeric_limits<int64_t>::min(),
                                            std::numeric_limits<int64_t>::max(), -1})
                           : below(7) - 2;
        } else {
          p[i] = static_cast<T>(value());
        }
      }
    });
    if (chance(15) && t.dim() >= 2) t = transpose(t, 0, -1);  // non-contiguous
    if (is_floating(dtype) && chance(50)) t.requires_grad_();
    return t;
  }
  Tensor tensor() { return tensor(shape(), dtype()); }
  Tensor floating(const Shape& s) { return tensor(s, chance(85) ? kFloat32 : kFloat64); }
  // A second operand: mostly the same shape or one that broadcasts.
  Tensor like(const Tensor& t) {
    if (chance(15)) return tensor();
    Shape s = t.shape();
    if (!s.empty() && chance(30)) s[static_cast<size_t>(below(static_cast<int64_t>(s.size())))] = 1;
    if (!s.empty() && chance(15)) s.erase(s.begin());
    return tensor(s, chance(90) ? t.dtype() : dtype());
  }
  Tensor maybe(const Tensor& t) { return chance(20) ? Tensor() : t; }
  Tensor lengths(const Shape& s, int64_t max_len) {
    Tensor t = zeros(s, kInt64);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data_ptr<int64_t>()[i] = chance(10) ? below(2 * max_len + 3) - 1 : below(max_len + 1);
    return t;
  }
  // Any mask attograd takes: none, bool keep, float additive (with -inf),
  // valid lengths, or something wrong.
  Tensor mask(const Shape& scores) {
    Shape s = scores;
    if (!s.empty() && chance(40)) s[static_cast<size_t>(below(static_cast<int64_t>(s.size())))] = 1;
    if (!s.empty() && chance(20)) s.erase(s.begin());
    switch (below(5)) {
      case 0:
        return Tensor();
      case 1:
        return tensor(s, kBool);
      case 2: {
        Tensor additive = tensor(s, chance(80) ? kFloat32 : kFloat64).detach();
        if (additive.numel() > 0 && chance(50))
          dispatch_floating(additive.dtype(), "mask", [&](auto tag) {
            additive.contiguous().data_ptr<decltype(tag)>()[0] = -INFINITY;
          });
        return additive;
      }
      case 3:
        return lengths(s, scores.empty() ? 2 : scores.back());
      default:
        return tensor();
    }
  }

 private:
  std::mt19937_64 rng_;
};

using Op = std::function<Tensor(Gen&)>;

// ---- the ops, each drawing its own arguments -------------------------------------------

std::vector<std::pair<std::string, Op>> all_ops() {
  std::vector<std::pair<std::string, Op>> ops;
  auto add_op = [&](std::string name, Op op) { ops.emplace_back(std::move(name), std::move(op)); };

  // creation
  add_op("creation", [](Gen& g) {
    Shape s = g.shape();
    if (g.chance(10)) s.push_back(g.size());
    switch (g.below(9)) {
      case 0:
        return zeros(s, g.dtype());
      case 1:
        return ones(s, g.dtype());
      case 2:
        return full(s, g.value(), g.dtype());
      case 3:
        return arange(g.size() * 2, g.dtype());
      case 4:
        return rand(s, g.dtype());
      case 5:
        return randn(s, g.dtype());
      case 6:
        return uniform(s, g.value(), g.value(), g.dtype());
      case 7:
        return scalar_tensor(g.value(), g.dtype());
      default:
        return tensor(std::vector<double>(static_cast<size_t>(g.below(5)), g.value()), s,
                      g.dtype());
    }
  });
  add_op("to", [](Gen& g) { return g.tensor().to(g.dtype()); });
  add_op("clone/contiguous/detach", [](Gen& g) {
    const Tensor t = g.tensor();
    return g.chance(50) ? t.clone() : t.contiguous().detach();
  });
  add_op("item/size/print", [](Gen& g) {
    const Tensor t = g.tensor();
    to_string(t);
    t.size(g.dim_arg(t.dim()));
    return scalar_tensor(t.item());
  });

  // elementwise
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  const std::vector<std::pair<std::string, Binary>> binaries = {{"add", add},
                                                                {"sub", sub},
                                                                {"mul", mul},
                                                                {"div", div},
                                                                {"pow", pow},
                                                                {"maximum", maximum},
                                                                {"eq", eq},
                                                                {"ne", ne},
                                                                {"lt", lt},
                                                                {"le", le},
                                                                {"gt", gt},
                                                                {"ge", ge},
                                                                {"logical_and", logical_and},
                                                                {"logical_or", logical_or}};
  for (const auto& [name, fn] : binaries)
    add_op(name, [fn = fn](Gen& g) {
      const Tensor a = g.tensor();
      return fn(a, g.like(a));
    });
  add_op("scalar operators", [](Gen& g) {
    const Tensor a = g.tensor();
    const double v = g.value();
    switch (g.below(5)) {
      case 0:
        return a + v;
      case 1:
        return v - a;
      case 2:
        return a * v;
      case 3:
        return v / a;
      default:
        return pow(a, v);
    }
  });
  using Unary = Tensor (*)(const Tensor&);
  const std::vector<std::pair<std::string, Unary>> unaries = {
      {"neg", neg},   {"exp", exp},         {"log", log},
      {"tanh", tanh}, {"sigmoid", sigmoid}, {"relu", relu},
      {"sqrt", sqrt}, {"abs", abs},         {"logical_not", logical_not}};
  for (const auto& [name, fn] : unaries) add_op(name, [fn = fn](Gen& g) { return fn(g.tensor()); });

  // reductions
  add_op("reductions", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t d = g.dim_arg(t.dim());
    const bool keep = g.chance(50);
    switch (g.below(8)) {
      case 0:
        return sum(t);
      case 1:
        return sum(t, d, keep);
      case 2:
        return sum(t, std::vector<int64_t>{d, g.dim_arg(t.dim())}, keep);
      case 3:
        return mean(t);
      case 4:
        return mean(t, d, keep);
      case 5:
        return max(t);
      case 6:
        return max(t, d, keep);
      default:
        return argmax(t, d, keep);
    }
  });

  // shapes and views
  add_op("reshape/view", [](Gen& g) {
    const Tensor t = g.tensor();
    Shape s = g.shape();
    if (!s.empty() && g.chance(50))
      s[static_cast<size_t>(g.below(static_cast<int64_t>(s.size())))] = -1;
    if (g.chance(30)) s = {t.numel()};
    return g.chance(70) ? reshape(t, s) : view(t, s);
  });
  add_op("flatten/transpose/permute", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t r = t.dim();
    switch (g.below(3)) {
      case 0:
        return flatten(t, g.dim_arg(r), g.dim_arg(r));
      case 1:
        return transpose(t, g.dim_arg(r), g.dim_arg(r));
      default: {
        std::vector<int64_t> dims(static_cast<size_t>(g.chance(90) ? r : g.below(5)));
        for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
        std::shuffle(dims.begin(), dims.end(), std::mt19937_64(static_cast<uint64_t>(g.below(99))));
        if (!dims.empty() && g.chance(10)) dims[0] = g.dim_arg(r);
        return permute(t, dims);
      }
    }
  });
  add_op("squeeze/unsqueeze", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t d = g.dim_arg(t.dim() + 1);
    switch (g.below(3)) {
      case 0:
        return squeeze(t);
      case 1:
        return squeeze(t, d);
      default:
        return unsqueeze(t, d);
    }
  });
  add_op("expand/broadcast_to", [](Gen& g) {
    const Tensor t = g.tensor();
    Shape s = t.shape();
    for (int64_t& d : s)
      if (d == 1 && g.chance(50)) d = g.size();
    if (g.chance(30)) s.insert(s.begin(), g.size());
    if (!s.empty() && g.chance(20)) s.back() = -1;
    return g.chance(50) ? expand(t, s) : broadcast_to(t, s);
  });

  // indexing and joining
  add_op("cat/stack", [](Gen& g) {
    const Tensor a = g.tensor();
    std::vector<Tensor> list = {a};
    for (int64_t i = g.below(3); i > 0; --i) list.push_back(g.chance(70) ? g.like(a) : a);
    const int64_t d = g.dim_arg(a.dim() + 1);
    return g.chance(50) ? cat(list, d) : stack(list, d);
  });
  add_op("repeat_interleave", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t d = g.dim_arg(t.dim());
    if (g.chance(50)) return repeat_interleave(t, g.size() * 2, d);
    return repeat_interleave(t, g.lengths({g.below(4)}, 3), d);
  });
  add_op("masked_fill/where", [](Gen& g) {
    const Tensor t = g.tensor();
    const Tensor cond = g.chance(80) ? g.tensor(g.like(t).shape(), kBool) : g.tensor();
    switch (g.below(3)) {
      case 0:
        return masked_fill(t, cond, g.value());
      case 1:
        return where(cond, t, g.like(t));
      default:
        return where(cond, t, g.value());
    }
  });
  add_op("narrow/index_select", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t d = g.dim_arg(t.dim());
    if (g.chance(50)) return narrow(t, d, g.below(7) - 3, g.below(5) - 1);
    return index_select(t, d, g.lengths({g.below(4)}, 2));
  });

  // products
  add_op("matmul/bmm/mm", [](Gen& g) {
    const Tensor a = g.floating(g.shape());
    Shape bs = g.shape();
    if (a.dim() >= 1 && !bs.empty() && g.chance(70))
      bs[bs.size() >= 2 ? bs.size() - 2 : 0] = a.size(-1);
    const Tensor b = g.floating(bs);
    switch (g.below(3)) {
      case 0:
        return matmul(a, b);
      case 1:
        return bmm(a, b);
      default:
        return mm(a, b);
    }
  });
  add_op("linear", [](Gen& g) {
    const Tensor x = g.floating(g.shape());
    const int64_t in = x.dim() > 0 && g.chance(80) ? x.size(-1) : g.size();
    const Tensor w = g.floating({g.size(), in});
    return linear(x, w, g.maybe(g.floating({w.dim() == 2 ? w.size(0) : 1})));
  });

  // softmax family and attention kernels
  add_op("softmax/log_softmax", [](Gen& g) {
    const Tensor t = g.tensor();
    const int64_t d = g.dim_arg(t.dim());
    return g.chance(50) ? softmax(t, d) : log_softmax(t, d);
  });
  add_op("masked_softmax_last", [](Gen& g) {
    const Tensor x = g.tensor();
    return masked_softmax_last(x, g.tensor(g.like(x).shape(), kBool),
                               g.chance(80) ? g.value() : -1e300, g.chance(50));
  });
  add_op("additive_scores", [](Gen& g) {
    const int64_t B = g.size(), h = g.size();
    const Tensor q = g.floating({B, g.size(), h});
    return additive_scores(q, g.floating({B, g.size(), g.chance(80) ? h : g.size()}),
                           g.floating({g.chance(80) ? h : g.size()}));
  });
  add_op("dropout/losses", [](Gen& g) {
    const Tensor x = g.tensor();
    switch (g.below(3)) {
      case 0:
        return dropout(x, g.chance(80) ? 0.5 : g.value(), g.chance(50));
      case 1:
        return mse_loss(x, g.like(x));
      default:
        return cross_entropy(x, g.lengths(g.shape(1), 3));
    }
  });

  // masks
  add_op("mask makers", [](Gen& g) {
    switch (g.below(4)) {
      case 0:
        return nn::sequence_mask(g.lengths(g.shape(2), 3), g.size() * 2);
      case 1:
        return nn::causal_mask(g.size(), g.size());
      case 2:
        return nn::lengths_to_keep(g.lengths(g.shape(2), 3), g.shape());
      default:
        return nn::key_keep_to_keep(g.tensor(g.shape(2), kBool), g.shape());
    }
  });
  add_op("mask conversions", [](Gen& g) {
    const Tensor m = g.tensor();
    switch (g.below(6)) {
      case 0:
        return nn::keep_to_additive(m, g.dtype(), g.value());
      case 1:
        return nn::additive_to_keep(m, g.value());
      case 2:
        return nn::padding_to_keep(m);
      case 3:
        return nn::keep_to_padding(m, g.dtype());
      case 4:
        return nn::padding_to_additive(m, g.value());
      default:
        return nn::merge_keep(g.maybe(m), g.maybe(g.like(m)));
    }
  });
  add_op("masked_softmax", [](Gen& g) {
    const Tensor x = g.tensor();
    const Tensor mask = g.mask(x.shape());
    const double fill = g.chance(70) ? nn::kD2lMaskValue : g.value();
    if (mask.defined() && mask.dtype() == kInt64) return nn::masked_softmax(x, mask, fill);
    return nn::masked_softmax_keep(
        x, mask, g.chance(50) ? nn::MaskedRows::Zero : nn::MaskedRows::Uniform, fill);
  });
  add_op("attention_softmax", [](Gen& g) {
    const Tensor scores = g.floating(g.shape());
    const Tensor lens = g.chance(50) ? g.mask(scores.shape()) : Tensor();
    return nn::attention_softmax(
        scores, {.valid_lens = lens,
                 .attn_mask = g.mask(scores.shape()),
                 .is_causal = g.chance(30),
                 .fully_masked_rows = g.chance(50) ? nn::MaskedRows::Zero : nn::MaskedRows::Uniform,
                 .mask_value = g.chance(70) ? nn::kMaskedScore : g.value()});
  });

  // attention
  add_op("scaled_dot_product_attention", [](Gen& g) {
    const int64_t B = g.size(), E = g.size(), S = g.size();
    const Tensor q = g.floating({B, g.size(), E});
    const Tensor k = g.floating({B, S, g.chance(85) ? E : g.size()});
    const Tensor v = g.floating({B, g.chance(85) ? S : g.size(), g.size()});
    const Shape scores = {B, q.dim() == 3 ? q.size(1) : 1, S};
    return nn::functional::scaled_dot_product_attention(
        q, k, v, g.mask(scores), g.chance(80) ? 0.0 : 0.5, g.chance(30),
        g.chance(80) ? std::optional<double>() : std::optional<double>(g.value()));
  });
  add_op("DotProductAttention/AdditiveAttention", [](Gen& g) {
    const int64_t B = g.size(), d = g.size(), Tk = g.size();
    const Tensor q = g.floating({B, g.size(), d});
    const Tensor k = g.floating({B, Tk, g.chance(85) ? d : g.size()});
    const Tensor v = g.floating({B, g.chance(90) ? Tk : g.size(), g.size()});
    const Shape scores = {B, q.size(1), Tk};
    const Tensor lens =
        g.chance(50) ? g.lengths(g.chance(50) ? Shape{B} : Shape{B, q.size(1)}, Tk) : Tensor();
    if (g.chance(50)) {
      nn::DotProductAttention attention(g.chance(80) ? 0.0 : 0.3);
      attention.masked_rows = g.chance(50) ? nn::MaskedRows::Zero : nn::MaskedRows::Uniform;
      return attention(q, k, v, lens, g.mask(scores));
    }
    nn::AdditiveAttention attention(g.chance(85) ? k.size(2) : g.size(), d, g.size());
    if (g.chance(20)) attention.to(kFloat64);
    return attention(q, k, v, lens, g.mask(scores));
  });
  add_op("MultiHeadAttention", [](Gen& g) {
    const int64_t B = g.size(), heads = g.size(), Tk = g.size();
    const int64_t hidden = heads * (g.chance(85) ? g.size() : 1) + (g.chance(10) ? 1 : 0);
    nn::MultiHeadAttention mha(3, 2, 2, hidden, heads, 0.0, g.chance(50));
    const Tensor q = g.floating({B, g.size(), 2});
    const Tensor k = g.floating({B, Tk, g.chance(90) ? 3 : 2});
    const Tensor v = g.floating({B, Tk, 2});
    const Tensor lens = g.chance(50) ? g.lengths({B}, Tk) : Tensor();
    return mha(q, k, v, lens, g.mask({B, q.size(1), Tk}));
  });
  add_op("keras layers", [](Gen& g) {
    const int64_t B = g.size(), dim = g.size(), Tv = g.size();
    const Tensor query = g.floating({B, g.size(), dim});
    const Tensor value = g.floating({B, Tv, g.chance(85) ? dim : g.size()});
    const Tensor key = g.chance(50) ? Tensor() : g.floating(value.shape());
    const Tensor query_mask = g.chance(50) ? Tensor() : g.tensor({B, query.size(1)}, kBool);
    const Tensor value_mask = g.chance(50) ? Tensor() : g.tensor({B, Tv}, kBool);
    const bool causal = g.chance(30);
    if (g.chance(50)) {
      nn::keras::Attention layer(g.chance(50), g.chance(80) ? "dot" : "concat");
      return layer(query, value, key, query_mask, value_mask, causal);
    }
    nn::keras::AdditiveAttention layer(g.chance(85) ? dim : g.size(), g.chance(50));
    return layer(query, value, key, query_mask, value_mask, causal);
  });

  // modules, state dicts, optimizers
  add_op("Linear/Dropout modules", [](Gen& g) {
    nn::Linear layer(g.size(), g.size(), g.chance(50));
    const Tensor x = g.floating({g.size(), g.chance(85) ? layer.in_features : g.size()});
    nn::Dropout drop(g.chance(80) ? 0.2 : g.value());
    if (g.chance(50)) drop.eval();
    return drop(layer(x));
  });
  add_op("load_state_dict/optimizers", [](Gen& g) {
    nn::Linear layer(2, g.chance(90) ? 3 : g.size());
    std::map<std::string, Tensor> state = layer.state_dict();
    if (g.chance(50)) state["weight"] = g.tensor(g.chance(70) ? Shape{3, 2} : g.shape(), g.dtype());
    if (g.chance(20)) state["extra"] = g.tensor();
    if (g.chance(20)) state.erase("bias");
    layer.load_state_dict(state, g.chance(50));
    Tensor loss = sum(layer(g.floating({g.size(), 2})));
    if (g.chance(30)) layer.load_state_dict(layer.state_dict());
    loss.backward();
    if (g.chance(50)) {
      optim::SGD sgd(layer.parameters(), g.value(), g.chance(50) ? 0.0 : g.value());
      sgd.step();
    } else {
      optim::Adam adam(layer.parameters(), g.value());
      adam.step();
    }
    return layer.weight;
  });
  add_op("npy round trip", [](Gen& g) {
    std::vector<uint8_t> bytes = serialize_npy(g.tensor());
    if (!bytes.empty() && g.chance(50))
      bytes[static_cast<size_t>(g.below(static_cast<int64_t>(bytes.size())))] ^=
          static_cast<uint8_t>(1 + g.below(255));
    return parse_npy(bytes.data(), bytes.size());
  });
  add_op("backward misuse", [](Gen& g) {
    const Tensor x = g.floating(g.shape()).requires_grad_();
    Tensor y = g.chance(50) ? x * x : sum(x);
    y.backward(g.chance(50) ? Tensor() : g.tensor(), g.chance(50));
    if (g.chance(50)) y.backward(g.tensor());
    return x.grad();
  });
  return ops;
}

TEST(PropertyTest, EveryOpGivesAResultOrAnAgError) {
  const uint64_t seed = env_or("ATTOGRAD_PROPERTY_SEED", kDefaultSeed);
  const int iterations =
      static_cast<int>(env_or("ATTOGRAD_PROPERTY_ITERATIONS", kDefaultIterations));
  const auto ops = all_ops();
  Gen g(seed);
  manual_seed(seed);
  int results = 0, errors = 0;
  std::map<std::string, int> results_per_op;
  for (int i = 0; i < iterations; ++i) {
    const auto& [name, op] = ops[static_cast<size_t>(g.below(static_cast<int64_t>(ops.size())))];
    try {
      const Tensor out = op(g);
      // A result must be usable: printable, and differentiable when it says so.
      if (out.defined()) {
        to_string(out);
        if (out.requires_grad() && !out.is_leaf()) sum(out).backward();
      }
      ++results;
      ++results_per_op[name];
    } catch (const Error&) {
      ++errors;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " threw a non-ag::Error at iteration " << i << " (seed " << seed
                    << "): " << e.what();
    }
  }
  // Both outcomes must be common, and every op must succeed now and then, or
  // the generator tests too little.
  EXPECT_GT(results, iterations / 5);
  EXPECT_GT(errors, iterations / 10);
  if (iterations >= kDefaultIterations) {
    for (const auto& [name, op] : ops) EXPECT_GT(results_per_op[name], 0) << name;
  }
  std::cout << iterations << " random calls (seed " << seed << "): " << results << " results, "
            << errors << " ag::Errors\n";
}

}  // namespace
}  // namespace ag
