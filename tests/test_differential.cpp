// Differential testing against PyTorch (issue 25): thousands of random
// computation graphs, written with PyTorch's forward values and gradients by
// scripts/make_differential_graphs.py (whose header describes the file
// format), are rebuilt here with attograd by a small interpreter (kOps: op
// name -> lambda) and compared node by node and gradient by gradient.
//
// Tolerances, per tensor: |attograd - torch| <= rtol |torch| + atol max(1, max |torch|),
// rtol = atol = 1e-9 in float64 and 1e-4 in float32 (both engines round at
// every step, in the same dtype). A float64 node computed from float32 ones,
// and every gradient of a graph with float32 in it, gets float32's.
//
// On a mismatch the runner prints the smallest failing graph it can find:
//   forward  the first node whose value differs, rebuilt as one op over
//            leaves holding PyTorch's values of its inputs, and rerun: that
//            op alone, on the same numbers, differs from PyTorch.
//   backward (a gradient differs, or backward throws) PyTorch's gradients
//            are stored for the whole graph only, so smaller graphs take
//            central finite differences in float64 as their reference (the
//            leaves promoted, `to` nodes kept at float64). Greedily: (1) the
//            shortest prefix of ops whose last node alone, as the output,
//            still fails; then (2) each op input that is a node is cut into
//            a fresh leaf holding PyTorch's value of that node (same shape,
//            same point), keeping every cut that still fails. A subgraph
//            fails when backward throws or some analytic gradient (in its
//            own dtype) differs from the finite difference by more than
//            1e-5 + 1e-3 |fd| (float64) or 1e-3 max(1, max |fd|) + 1e-2 |fd|
//            (float32). Every stored value is away from kinks, so the finite
//            differences are sound; a backward bug too small for them (below
//            ~1e-5) is reported with the whole graph instead.
//
// Sanitizer builds run every 10th graph (ASan+UBSan are ~10x slower); the
// environment variable ATTOGRAD_DIFFERENTIAL_STRIDE=N runs every N-th graph
// in any build, ATTOGRAD_DIFFERENTIAL_GRAPH=id runs only that graph, and
// ATTOGRAD_DIFFERENTIAL_DIR=dir reads dir/differential_<i>.npz instead of the
// committed files (graphs made with the generator's --count, --seed, --out).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace ag {
namespace {

namespace F = nn::functional;

// ---- the description of a graph -----------------------------------------------------
struct Pools {
  std::map<std::string, std::vector<double>> values;  // "f32", "f64", "i64", "bool"
};

struct Stored {
  std::string dtype;  // f32, f64, i64, bool
  Shape shape;
  int64_t offset = 0;
};

struct Leaf {
  std::string name;
  Stored value;
  bool requires_grad = false;
};

struct Node {
  std::string name;
  Stored value;                     // PyTorch's forward value
  std::vector<std::string> tokens;  // op name, then its arguments
};

struct GraphDesc {
  int id = 0;
  std::vector<Leaf> leaves;
  std::vector<Node> nodes;
  std::vector<std::string> outs;
  std::map<std::string, int64_t> grads;  // leaf -> offset of d loss / d leaf
  const Pools* pools = nullptr;
};

DType dtype_of(const std::string& name) {
  if (name == "f32") return kFloat32;
  if (name == "f64") return kFloat64;
  if (name == "i64") return kInt64;
  if (name == "bool") return kBool;
  throw Error("differential: unknown dtype '" + name + "'");
}

Shape parse_ints(const std::string& s) {
  Shape out;
  if (s == "-") return out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) out.push_back(std::stoll(part));
  return out;
}

// The stored tensor `s` (a fresh leaf-able tensor; 0-d when its shape is empty).
Tensor materialise(const Pools& pools, const Stored& s) {
  const std::vector<double>& pool = pools.values.at(s.dtype);
  const int64_t n = shape_numel(s.shape, "differential");
  if (s.offset < 0 || s.offset + n > static_cast<int64_t>(pool.size()))
    throw Error("differential: stored tensor beyond its pool");
  std::vector<double> v(pool.begin() + s.offset, pool.begin() + s.offset + n);
  if (s.shape.empty()) return scalar_tensor(v.at(0), dtype_of(s.dtype));
  return tensor(std::move(v), s.shape, dtype_of(s.dtype));
}

std::vector<GraphDesc> parse_graphs(const std::string& text, const Pools* pools) {
  std::vector<GraphDesc> graphs;
  std::stringstream lines(text);
  std::string line;
  GraphDesc g;
  while (std::getline(lines, line)) {
    std::stringstream in(line);
    std::vector<std::string> t;
    for (std::string tok; in >> tok;) t.push_back(tok);
    if (t.empty()) continue;
    const auto stored = [&](size_t i) {
      return Stored{t.at(i), parse_ints(t.at(i + 1)), std::stoll(t.at(i + 2))};
    };
    if (t[0] == "graph") {
      g = GraphDesc{};
      g.id = std::stoi(t.at(1));
      g.pools = pools;
    } else if (t[0] == "leaf") {
      g.leaves.push_back({t.at(1), stored(2), t.at(5) == "1"});
    } else if (t[0] == "node") {
      g.nodes.push_back({t.at(1), stored(2), std::vector<std::string>(t.begin() + 5, t.end())});
    } else if (t[0] == "out") {
      g.outs.push_back(t.at(1));
    } else if (t[0] == "grad") {
      g.grads[t.at(1)] = std::stoll(t.at(2));
    } else if (t[0] == "end") {
      graphs.push_back(g);
    } else {
      throw Error("differential: bad line '" + line + "'");
    }
  }
  return graphs;
}

// ---- the interpreter: op name -> lambda -------------------------------------------------
using Env = std::map<std::string, Tensor>;

// The arguments of one op: tokens[0] is the op's name.
struct Args {
  const std::vector<std::string>& tokens;
  const Env& env;
  bool promote;  // float64 everywhere (the finite-difference reference)

  const std::string& at(size_t i) const { return tokens.at(i); }
  bool none(size_t i) const { return at(i) == "_"; }
  Tensor t(size_t i) const {
    if (none(i)) return Tensor();
    auto it = env.find(at(i));
    if (it == env.end()) throw Error("differential: no tensor '" + at(i) + "'");
    return it->second;
  }
  int64_t i64(size_t i) const { return std::stoll(at(i)); }
  double f64(size_t i) const { return std::stod(at(i)); }
  bool flag(size_t i) const { return at(i) == "1"; }
  Shape ints(size_t i) const { return parse_ints(at(i)); }
  DType dtype(size_t i) const { return promote ? kFloat64 : dtype_of(at(i)); }
  std::vector<Tensor> tensors_from(size_t i) const {
    std::vector<Tensor> out;
    for (; i < tokens.size(); ++i) out.push_back(t(i));
    return out;
  }
};

using OpFn = std::function<Tensor(const Args&)>;

// Every op the generator draws, under the generator's name. A new op gets a
// line here and a builder in scripts/make_differential_graphs.py.
const std::map<std::string, OpFn>& ops() {
  static const std::map<std::string, OpFn> kOps = {
      // elementwise binary
      {"add", [](const Args& a) { return add(a.t(1), a.t(2)); }},
      {"sub", [](const Args& a) { return sub(a.t(1), a.t(2)); }},
      {"mul", [](const Args& a) { return mul(a.t(1), a.t(2)); }},
      {"div", [](const Args& a) { return div(a.t(1), a.t(2)); }},
      {"pow_t", [](const Args& a) { return pow(a.t(1), a.t(2)); }},
      {"maximum", [](const Args& a) { return maximum(a.t(1), a.t(2)); }},
      // with a scalar (the operators)
      {"add_s", [](const Args& a) { return a.t(1) + a.f64(2); }},
      {"sub_s", [](const Args& a) { return a.t(1) - a.f64(2); }},
      {"rsub_s", [](const Args& a) { return a.f64(2) - a.t(1); }},
      {"mul_s", [](const Args& a) { return a.t(1) * a.f64(2); }},
      {"div_s", [](const Args& a) { return a.t(1) / a.f64(2); }},
      {"rdiv_s", [](const Args& a) { return a.f64(2) / a.t(1); }},
      {"pow_s", [](const Args& a) { return pow(a.t(1), a.f64(2)); }},
      // elementwise unary
      {"neg", [](const Args& a) { return -a.t(1); }},
      {"exp", [](const Args& a) { return exp(a.t(1)); }},
      {"log", [](const Args& a) { return log(a.t(1)); }},
      {"tanh", [](const Args& a) { return tanh(a.t(1)); }},
      {"sigmoid", [](const Args& a) { return sigmoid(a.t(1)); }},
      {"relu", [](const Args& a) { return relu(a.t(1)); }},
      {"sqrt", [](const Args& a) { return sqrt(a.t(1)); }},
      {"abs", [](const Args& a) { return abs(a.t(1)); }},
      // reductions
      {"sum_all", [](const Args& a) { return sum(a.t(1)); }},
      {"mean_all", [](const Args& a) { return mean(a.t(1)); }},
      {"sum_dim", [](const Args& a) { return sum(a.t(1), a.i64(2), a.flag(3)); }},
      {"mean_dim", [](const Args& a) { return mean(a.t(1), a.i64(2), a.flag(3)); }},
      {"sum_dims", [](const Args& a) { return sum(a.t(1), a.ints(2), a.flag(3)); }},
      {"mean_dims", [](const Args& a) { return mean(a.t(1), a.ints(2), a.flag(3)); }},
      {"max_all", [](const Args& a) { return max(a.t(1)); }},
      {"max_dim", [](const Args& a) { return max(a.t(1), a.i64(2), a.flag(3)); }},
      {"max_indices",
       [](const Args& a) { return max_with_indices(a.t(1), a.i64(2), a.flag(3)).indices; }},
      {"argmax", [](const Args& a) { return argmax(a.t(1), a.i64(2), a.flag(3)); }},
      // shapes and views
      {"reshape", [](const Args& a) { return reshape(a.t(1), a.ints(2)); }},
      {"view", [](const Args& a) { return view(a.t(1), a.ints(2)); }},
      {"flatten", [](const Args& a) { return flatten(a.t(1), a.i64(2), a.i64(3)); }},
      {"transpose", [](const Args& a) { return transpose(a.t(1), a.i64(2), a.i64(3)); }},
      {"permute", [](const Args& a) { return permute(a.t(1), a.ints(2)); }},
      {"unsqueeze", [](const Args& a) { return unsqueeze(a.t(1), a.i64(2)); }},
      {"squeeze_all", [](const Args& a) { return squeeze(a.t(1)); }},
      {"squeeze_dim", [](const Args& a) { return squeeze(a.t(1), a.i64(2)); }},
      {"expand", [](const Args& a) { return expand(a.t(1), a.ints(2)); }},
      {"broadcast_to", [](const Args& a) { return broadcast_to(a.t(1), a.ints(2)); }},
      {"contiguous", [](const Args& a) { return a.t(1).contiguous(); }},
      {"clone", [](const Args& a) { return a.t(1).clone(); }},
      {"to", [](const Args& a) { return a.t(1).to(a.dtype(2)); }},
      // indexing, joining, selecting
      {"cat", [](const Args& a) { return cat(a.tensors_from(2), a.i64(1)); }},
      {"stack", [](const Args& a) { return stack(a.tensors_from(2), a.i64(1)); }},
      {"repeat_interleave",
       [](const Args& a) { return repeat_interleave(a.t(1), a.i64(2), a.i64(3)); }},
      {"repeat_interleave_t",
       [](const Args& a) { return repeat_interleave(a.t(1), a.t(2), a.i64(3)); }},
      {"masked_fill", [](const Args& a) { return masked_fill(a.t(1), a.t(2), a.f64(3)); }},
      {"where", [](const Args& a) { return where(a.t(1), a.t(2), a.t(3)); }},
      {"where_s", [](const Args& a) { return where(a.t(1), a.t(2), a.f64(3)); }},
      {"narrow", [](const Args& a) { return narrow(a.t(1), a.i64(2), a.i64(3), a.i64(4)); }},
      {"index_select", [](const Args& a) { return index_select(a.t(1), a.i64(2), a.t(3)); }},
      // matmul family
      {"matmul", [](const Args& a) { return matmul(a.t(1), a.t(2)); }},
      {"bmm", [](const Args& a) { return bmm(a.t(1), a.t(2)); }},
      {"mm", [](const Args& a) { return mm(a.t(1), a.t(2)); }},
      {"linear", [](const Args& a) { return linear(a.t(1), a.t(2), a.t(3)); }},
      // softmax family
      {"softmax", [](const Args& a) { return softmax(a.t(1), a.i64(2)); }},
      {"log_softmax", [](const Args& a) { return log_softmax(a.t(1), a.i64(2)); }},
      {"masked_softmax_last",
       [](const Args& a) { return masked_softmax_last(a.t(1), a.t(2), a.f64(3), a.flag(4)); }},
      // attention
      {"additive_scores", [](const Args& a) { return additive_scores(a.t(1), a.t(2), a.t(3)); }},
      {"sdpa",
       [](const Args& a) {
         return F::scaled_dot_product_attention(
             a.t(1), a.t(2), a.t(3), a.t(4), 0.0, a.flag(5),
             a.none(6) ? std::nullopt : std::optional<double>(a.f64(6)));
       }},
      {"sdpa_weights_out",
       [](const Args& a) {
         return F::scaled_dot_product_attention_with_weights(
                    a.t(1), a.t(2), a.t(3), a.t(4), 0.0, a.flag(5),
                    a.none(6) ? std::nullopt : std::optional<double>(a.f64(6)))
             .output;
       }},
      {"sdpa_weights",
       [](const Args& a) {
         return F::scaled_dot_product_attention_with_weights(
                    a.t(1), a.t(2), a.t(3), a.t(4), 0.0, a.flag(5),
                    a.none(6) ? std::nullopt : std::optional<double>(a.f64(6)))
             .weights;
       }},
      {"flash_attention",
       [](const Args& a) {
         AttentionMasks masks;
         masks.keep = a.t(5);
         masks.additive = a.t(6);
         masks.lengths = a.t(7);
         masks.causal = a.flag(8);
         masks.masked_rows_uniform = a.flag(9);
         return flash_attention(a.t(1), a.t(2), a.t(3), a.f64(4), masks);
       }},
      {"masked_softmax",
       [](const Args& a) { return nn::masked_softmax(a.t(1), a.t(2), a.f64(3)); }},
      {"masked_softmax_keep",
       [](const Args& a) {
         return nn::masked_softmax_keep(
             a.t(1), a.t(2), a.flag(3) ? nn::MaskedRows::Zero : nn::MaskedRows::Uniform, a.f64(4));
       }},
      {"attention_softmax",
       [](const Args& a) {
         return nn::attention_softmax(
             a.t(1),
             {.valid_lens = a.t(2),
              .attn_mask = a.t(3),
              .is_causal = a.flag(4),
              .fully_masked_rows = a.flag(5) ? nn::MaskedRows::Zero : nn::MaskedRows::Uniform,
              .mask_value = a.f64(6)});
       }},
      {"transpose_qkv", [](const Args& a) { return nn::transpose_qkv(a.t(1), a.i64(2)); }},
      {"transpose_output", [](const Args& a) { return nn::transpose_output(a.t(1), a.i64(2)); }},
      // dropout and losses
      {"dropout", [](const Args& a) { return dropout(a.t(1), a.f64(2), a.flag(3)); }},
      {"mse_loss", [](const Args& a) { return mse_loss(a.t(1), a.t(2)); }},
      {"cross_entropy", [](const Args& a) { return cross_entropy(a.t(1), a.t(2)); }},
      {"masked_softmax_ce_loss",
       [](const Args& a) { return nn::masked_softmax_ce_loss(a.t(1), a.t(2), a.t(3)); }},
      // normalization, recurrent cells, embeddings
      {"layer_norm",
       [](const Args& a) { return layer_norm(a.t(1), a.ints(2), a.t(3), a.t(4), a.f64(5)); }},
      {"LayerNorm",
       [](const Args& a) {
         nn::LayerNorm norm(a.ints(2), a.f64(5));
         norm.weight = a.t(3);
         norm.bias = a.t(4);
         return norm(a.t(1));
       }},
      {"gru_cell", [](const Args& a) { return gru_cell(a.t(1), a.t(2), a.t(3)); }},
      {"gru",
       [](const Args& a) {
         // tokens: gru x h0 layers which(1: h_n) then per layer w_ih w_hh b_ih b_hh
         const Tensor x = a.t(1);
         const int64_t layers = a.i64(3);
         const Tensor w_hh0 = a.t(6);
         nn::GRU gru(x.shape().back(), w_hh0.shape().back(), layers);
         for (size_t l = 0; l < static_cast<size_t>(layers); ++l) {
           const size_t at = 5 + 4 * l;
           gru.weight_ih[l] = a.t(at);
           gru.weight_hh[l] = a.t(at + 1);
           gru.bias_ih[l] = a.t(at + 2);
           gru.bias_hh[l] = a.t(at + 3);
         }
         const nn::GRUOutput out = gru(x, a.t(2));
         return a.flag(4) ? out.h_n : out.output;
       }},
      {"embedding",
       [](const Args& a) {
         const Tensor weight = a.t(1);
         nn::Embedding embedding(weight.shape().at(0), weight.shape().at(1));
         embedding.weight = weight;
         return embedding(a.t(2));
       }},
      // masks (compared, not differentiated)
      {"sequence_mask", [](const Args& a) { return nn::sequence_mask(a.t(1), a.i64(2)); }},
      {"causal_mask", [](const Args& a) { return nn::causal_mask(a.i64(1), a.i64(2)); }},
      {"keep_to_additive", [](const Args& a) { return nn::keep_to_additive(a.t(1), a.dtype(2)); }},
  };
  return kOps;
}

Tensor run_op(const std::vector<std::string>& tokens, const Env& env, bool promote) {
  auto it = ops().find(tokens.at(0));
  if (it == ops().end())
    throw Error("differential: op '" + tokens[0] +
                "' is in the graphs but not in the runner's table (tests/test_differential.cpp)");
  return it->second(Args{tokens, env, promote});
}

// ---- comparing --------------------------------------------------------------------------
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType dtype) {
  return dtype == kFloat64 ? Tolerance{1e-9, 1e-9} : Tolerance{1e-4, 1e-4};
}

// The largest error / tolerance seen in float64 and float32 comparisons (the
// margin the tolerances leave; printed after the run).
double worst_ratio[2] = {0, 0};

// "" when close (with `precision`'s tolerance), else where and by how much.
std::string compare(const Tensor& actual, const Tensor& expected, DType precision) {
  if (!actual.defined()) return "undefined";
  if (actual.shape() != expected.shape())
    return "shape " + shape_str(actual.shape()) + " vs torch " + shape_str(expected.shape());
  const std::vector<double> a = actual.to_vector(), e = expected.to_vector();
  if (!is_floating(expected.dtype()) || !is_floating(actual.dtype())) {
    if (actual.dtype() != expected.dtype())
      return std::string("dtype ") + dtype_name(actual.dtype()) + " vs torch " +
             dtype_name(expected.dtype());
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i] != e[i])
        return "at " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs torch " +
               std::to_string(e[i]);
    return "";
  }
  const Tolerance tol = tolerance(precision);
  double scale = 1;
  for (double x : e) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < a.size(); ++i) {
    const double err = std::abs(a[i] - e[i]),
                 allowed = tol.rtol * std::abs(e[i]) + tol.atol * scale;
    double& worst = worst_ratio[precision == kFloat32];
    worst = std::max(worst, err / allowed);
    if (!(err <= allowed)) {
      std::ostringstream out;
      out.precision(10);
      out << "at flat index " << i << ": " << a[i] << " vs torch " << e[i] << " (|diff| " << err
          << ")";
      return out.str();
    }
  }
  return "";
}

// w_k[i] = cos(0.37 i + 1.1 k + 0.5), as the generator's sink_weights.
Tensor sink_weights(const Shape& shape, size_t k, DType dtype) {
  const int64_t n = shape_numel(shape, "differential");
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    w[static_cast<size_t>(i)] =
        std::cos(0.37 * static_cast<double>(i) + 1.1 * static_cast<double>(k) + 0.5);
  if (shape.empty()) return scalar_tensor(w.at(0), dtype);
  return tensor(std::move(w), shape, dtype);
}

// loss = sum_k sum(w_k * out_k), accumulated in float64.
Tensor weighted_loss(const std::vector<Tensor>& outs) {
  Tensor loss = scalar_tensor(0.0, kFloat64);
  for (size_t k = 0; k < outs.size(); ++k)
    loss = loss + sum(outs[k] * sink_weights(outs[k].shape(), k, outs[k].dtype())).to(kFloat64);
  return loss;
}

// ---- one subgraph, for the shrinker -------------------------------------------------------
// The nodes kept (indices into the graph), the nodes cut into leaves holding
// PyTorch's value, and the outputs.
struct Subgraph {
  std::vector<size_t> nodes;
  std::set<std::string> cut;
  std::vector<std::string> outs;
};

// Keeps only the nodes the outputs depend on (through uncut nodes).
Subgraph prune(const GraphDesc& g, Subgraph s) {
  std::set<std::string> needed(s.outs.begin(), s.outs.end());
  std::vector<size_t> kept;
  for (auto it = s.nodes.rbegin(); it != s.nodes.rend(); ++it) {
    const Node& n = g.nodes[*it];
    if (!needed.count(n.name) || s.cut.count(n.name)) continue;
    kept.push_back(*it);
    for (size_t i = 1; i < n.tokens.size(); ++i) needed.insert(n.tokens[i]);
  }
  std::reverse(kept.begin(), kept.end());
  std::set<std::string> cut;
  for (const std::string& c : s.cut)
    if (needed.count(c)) cut.insert(c);
  return {kept, cut, s.outs};
}

// The inputs of a subgraph: original leaves and cut nodes (as PyTorch computed them).
struct Inputs {
  std::vector<std::string> names;
  std::vector<Tensor> values;  // detached
  std::vector<bool> grad;
};

Inputs inputs_of(const GraphDesc& g, const Subgraph& s) {
  std::set<std::string> used(s.outs.begin(), s.outs.end());
  for (size_t i : s.nodes)
    for (size_t t = 1; t < g.nodes[i].tokens.size(); ++t) used.insert(g.nodes[i].tokens[t]);
  Inputs in;
  for (const Leaf& l : g.leaves)
    if (used.count(l.name)) {
      in.names.push_back(l.name);
      in.values.push_back(materialise(*g.pools, l.value));
      in.grad.push_back(l.requires_grad);
    }
  for (const Node& n : g.nodes)
    if (s.cut.count(n.name) && used.count(n.name)) {
      Tensor v = materialise(*g.pools, n.value);
      in.names.push_back(n.name);
      in.grad.push_back(is_floating(v.dtype()));
      in.values.push_back(v);
    }
  return in;
}

// Runs the subgraph on `leaves` (already requiring grad where wanted); returns the outputs.
std::vector<Tensor> run_subgraph(const GraphDesc& g, const Subgraph& s, const Inputs& in,
                                 const std::vector<Tensor>& leaves, bool promote, Env* env_out) {
  Env env;
  for (size_t i = 0; i < in.names.size(); ++i) env[in.names[i]] = leaves[i];
  for (size_t i : s.nodes) env[g.nodes[i].name] = run_op(g.nodes[i].tokens, env, promote);
  std::vector<Tensor> outs;
  for (const std::string& o : s.outs) outs.push_back(env.at(o));
  if (env_out) *env_out = env;
  return outs;
}

// "" when every analytic gradient of the subgraph agrees with float64 central
// differences (see the file comment), else the worst disagreement.
std::string fd_failure(const GraphDesc& g, const Subgraph& s) {
  const Inputs in = inputs_of(g, s);
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < in.values.size(); ++i) {
    Tensor v = in.values[i].detach().clone();
    if (in.grad[i]) v.requires_grad_(true);
    leaves.push_back(v);
  }
  try {
    const Tensor loss = weighted_loss(run_subgraph(g, s, in, leaves, false, nullptr));
    if (!loss.requires_grad()) return "";  // nothing here is differentiated
    loss.backward();
  } catch (const Error& e) {
    return std::string("attograd throws: ") + e.what();
  }
  // float64 copies for the finite differences
  std::vector<Tensor> base;
  for (const Tensor& v : in.values)
    base.push_back(is_floating(v.dtype()) ? v.to(kFloat64).clone() : v);
  const auto loss_at = [&](const std::vector<Tensor>& x) {
    NoGradGuard no_grad;
    return weighted_loss(run_subgraph(g, s, in, x, true, nullptr)).item();
  };
  const double eps = 1e-6;
  for (size_t i = 0; i < in.values.size(); ++i) {
    if (!in.grad[i]) continue;
    const Tensor analytic = leaves[i].grad();
    const std::vector<double> a = analytic.defined()
                                      ? analytic.to_vector()
                                      : std::vector<double>(static_cast<size_t>(leaves[i].numel()));
    std::vector<double> x = base[i].to_vector();
    std::vector<double> numeric(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      std::vector<Tensor> moved = base;
      const double x0 = x[j];
      x[j] = x0 + eps;
      moved[i] = base[i].shape().empty() ? scalar_tensor(x[j], kFloat64)
                                         : tensor(x, base[i].shape(), kFloat64);
      const double up = loss_at(moved);
      x[j] = x0 - eps;
      moved[i] = base[i].shape().empty() ? scalar_tensor(x[j], kFloat64)
                                         : tensor(x, base[i].shape(), kFloat64);
      const double down = loss_at(moved);
      x[j] = x0;
      numeric[j] = (up - down) / (2 * eps);
    }
    double scale = 1;
    for (double n : numeric) scale = std::max(scale, std::abs(n));
    const bool f32 = in.values[i].dtype() == kFloat32;
    for (size_t j = 0; j < x.size(); ++j) {
      const double err = std::abs(a[j] - numeric[j]);
      const double allowed =
          f32 ? 1e-3 * scale + 1e-2 * std::abs(numeric[j]) : 1e-5 + 1e-3 * std::abs(numeric[j]);
      if (!(err <= allowed)) {
        std::ostringstream out;
        out.precision(8);
        out << "d loss / d " << in.names[i] << " at flat index " << j << ": attograd " << a[j]
            << " vs finite differences " << numeric[j];
        return out.str();
      }
    }
  }
  return "";
}

std::string values_str(const Tensor& t) {
  std::ostringstream out;
  out.precision(6);
  out << "[";
  const std::vector<double> v = t.to_vector();
  for (size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
  out << "]";
  return out.str();
}

std::string join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) out += (out.empty() ? "" : " ") + t;
  return out;
}

std::string describe(const GraphDesc& g, const Subgraph& s) {
  std::ostringstream out;
  const Inputs in = inputs_of(g, s);
  for (size_t i = 0; i < in.names.size(); ++i)
    out << "  leaf " << in.names[i] << " " << dtype_name(in.values[i].dtype()) << " "
        << shape_str(in.values[i].shape()) << (in.grad[i] ? " requires_grad " : " ")
        << values_str(in.values[i]) << "\n";
  for (size_t i : s.nodes)
    out << "  " << g.nodes[i].name << " = " << join(g.nodes[i].tokens) << "\n";
  for (const std::string& o : s.outs) out << "  out " << o << "\n";
  return out.str();
}

// The whole graph, as a subgraph.
Subgraph whole(const GraphDesc& g) {
  Subgraph s;
  for (size_t i = 0; i < g.nodes.size(); ++i) s.nodes.push_back(i);
  s.outs = g.outs;
  return prune(g, s);
}

// Greedy shrinking of a gradient failure (see the file comment).
std::string shrink_backward(const GraphDesc& g) {
  Subgraph best = whole(g);
  std::string failure = fd_failure(g, best);
  if (failure.empty())
    return "the finite differences do not reproduce it; the whole graph:\n" + describe(g, best);
  // (1) the shortest prefix whose last float node alone still fails
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!is_floating(dtype_of(g.nodes[k].value.dtype))) continue;
    Subgraph s;
    for (size_t i = 0; i <= k; ++i) s.nodes.push_back(i);
    s.outs = {g.nodes[k].name};
    s = prune(g, s);
    if (s.nodes.empty()) continue;
    const std::string f = fd_failure(g, s);
    if (!f.empty()) {
      best = s;
      failure = f;
      break;
    }
  }
  // (2) cut op inputs into leaves while it still fails
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i : best.nodes) {
      for (size_t t = 1; t < g.nodes[i].tokens.size() && !changed; ++t) {
        const std::string& arg = g.nodes[i].tokens[t];
        const bool is_node = std::any_of(best.nodes.begin(), best.nodes.end(),
                                         [&](size_t j) { return g.nodes[j].name == arg; });
        if (!is_node) continue;
        Subgraph s = best;
        s.cut.insert(arg);
        s = prune(g, s);
        const std::string f = fd_failure(g, s);
        if (!f.empty()) {
          best = s;
          failure = f;
          changed = true;
        }
      }
      if (changed) break;
    }
  }
  return failure + "\nin the smallest failing graph (" + std::to_string(best.nodes.size()) +
         " op(s); cut inputs hold PyTorch's values):\n" + describe(g, best);
}

// ---- running one graph ----------------------------------------------------------------------
// "" when attograd agrees with PyTorch on every node and gradient, else a report
// with the smallest failing graph.
std::string check_graph(const GraphDesc& g) {
  // float32 tolerances for every value that float32 rounding reached (a
  // float64 node computed from a float32 one, and every gradient of a graph
  // with float32 in it)
  std::set<std::string> via_f32;
  for (const Leaf& l : g.leaves)
    if (l.value.dtype == "f32") via_f32.insert(l.name);
  for (const Node& n : g.nodes)
    if (n.value.dtype == "f32" ||
        std::any_of(n.tokens.begin() + 1, n.tokens.end(),
                    [&](const std::string& t) { return via_f32.count(t); }))
      via_f32.insert(n.name);
  const DType grad_precision = via_f32.empty() ? kFloat64 : kFloat32;
  Env env;
  for (const Leaf& l : g.leaves) {
    Tensor v = materialise(*g.pools, l.value);
    if (l.requires_grad) v.requires_grad_(true);
    env[l.name] = v;
  }
  const std::string head = "graph " + std::to_string(g.id) + ": ";
  for (const Node& n : g.nodes) {
    Tensor value;
    std::string problem;
    try {
      value = run_op(n.tokens, env, false);
      problem = compare(value, materialise(*g.pools, n.value),
                        via_f32.count(n.name) ? kFloat32 : kFloat64);
    } catch (const Error& e) {
      problem = std::string("attograd throws: ") + e.what();
    }
    if (!problem.empty()) {
      // The op alone on PyTorch's values of its inputs.
      Subgraph s;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].name == n.name) s.nodes.push_back(i);
      for (size_t t = 1; t < n.tokens.size(); ++t) s.cut.insert(n.tokens[t]);
      s.outs = {n.name};
      std::string alone;
      try {
        const Inputs in = inputs_of(g, s);
        alone =
            compare(run_subgraph(g, s, in, in.values, false, nullptr).at(0),
                    materialise(*g.pools, n.value), via_f32.count(n.name) ? kFloat32 : kFloat64);
      } catch (const Error& e) {
        alone = std::string("attograd throws: ") + e.what();
      }
      return head + "forward of " + n.name + " (" + n.tokens[0] + ") differs, " + problem +
             (alone.empty() ? "\n(the op alone on PyTorch's inputs agrees: an earlier node's "
                              "rounding; the whole graph:)\n" +
                                  describe(g, whole(g))
                            : "\nthe smallest failing graph, the op alone on PyTorch's inputs (" +
                                  alone + "):\n" + describe(g, s));
    }
    env[n.name] = value;
  }
  if (!g.outs.empty()) {
    std::vector<Tensor> outs;
    for (const std::string& o : g.outs) outs.push_back(env.at(o));
    try {
      weighted_loss(outs).backward();
    } catch (const Error& e) {
      return head + "backward throws: " + e.what() + "\n" + shrink_backward(g);
    }
  }
  for (const Leaf& l : g.leaves) {
    if (!l.requires_grad) continue;
    const Stored expected{l.value.dtype, l.value.shape, g.grads.at(l.name)};
    Tensor grad = env.at(l.name).grad();
    if (!grad.defined()) grad = zeros(l.value.shape, dtype_of(l.value.dtype));
    const std::string problem = compare(grad, materialise(*g.pools, expected), grad_precision);
    if (!problem.empty())
      return head + "d loss / d " + l.name + " differs from PyTorch's, " + problem + "\n" +
             shrink_backward(g);
  }
  return "";
}

// ---- the files ---------------------------------------------------------------------------------
struct GraphFile {
  Pools pools;
  std::vector<GraphDesc> graphs;
};

std::vector<double> as_doubles(const Tensor& t) {
  return t.to_vector();
}

// Every tests/fixtures/differential_<i>.npz (or $ATTOGRAD_DIFFERENTIAL_DIR/...), loaded once.
const std::vector<GraphFile>& graph_files() {
  static const std::vector<GraphFile> files = [] {
    std::vector<GraphFile> out;
    for (int i = 0;; ++i) {
      const char* dir = std::getenv("ATTOGRAD_DIFFERENTIAL_DIR");
      const std::string name = "differential_" + std::to_string(i) + ".npz";
      const std::string path =
          dir ? std::string(dir) + "/" + name : testing::source_path("tests/fixtures/" + name);
      if (!std::filesystem::exists(path)) break;
      out.emplace_back();
      GraphFile& f = out.back();
      const std::map<std::string, Tensor> npz = load_npz(path);
      f.pools.values["f32"] = as_doubles(npz.at("f32"));
      f.pools.values["f64"] = as_doubles(npz.at("f64"));
      f.pools.values["i64"] = as_doubles(npz.at("i64"));
      f.pools.values["bool"] = as_doubles(npz.at("b"));
      std::string text;
      for (double c : npz.at("desc").to_vector()) text.push_back(static_cast<char>(c));
      f.graphs = parse_graphs(text, nullptr);
    }
    for (GraphFile& f : out)
      for (GraphDesc& g : f.graphs) g.pools = &f.pools;
    return out;
  }();
  return files;
}

// AddressSanitizer builds (GCC defines __SANITIZE_ADDRESS__, clang answers __has_feature).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Every stride()-th graph runs: ATTOGRAD_DIFFERENTIAL_STRIDE, else 10 under
// the sanitizers (~10x slower), else 1.
int64_t stride() {
  if (const char* s = std::getenv("ATTOGRAD_DIFFERENTIAL_STRIDE")) return std::max(1, std::atoi(s));
  return kSanitized ? 10 : 1;
}

TEST(Differential, EveryGraphMatchesPyTorch) {
  const auto& files = graph_files();
  ASSERT_FALSE(files.empty()) << "no tests/fixtures/differential_*.npz";
  const char* only = std::getenv("ATTOGRAD_DIFFERENTIAL_GRAPH");
  const int64_t step = stride();
  int64_t run = 0, failed = 0;
  int worst_graph[2] = {-1, -1};  // where worst_ratio was reached
  for (const GraphFile& f : files) {
    for (const GraphDesc& g : f.graphs) {
      if (only ? g.id != std::atoi(only) : g.id % step != 0) continue;
      ++run;
      const double before[2] = {worst_ratio[0], worst_ratio[1]};
      const std::string problem = check_graph(g);
      for (int p = 0; p < 2; ++p)
        if (worst_ratio[p] > before[p]) worst_graph[p] = g.id;
      if (problem.empty()) continue;
      if (++failed <= 5) ADD_FAILURE() << problem;
      std::cout << "[differential] " << problem.substr(0, problem.find('\n')) << "\n";
    }
  }
  EXPECT_EQ(failed, 0) << failed << " of " << run << " graphs differ (the first 5 are shown)";
  EXPECT_GT(run, 0);
  std::cout << "[differential] " << run
            << " graphs checked; largest error / tolerance: " << worst_ratio[0]
            << " (float64, graph " << worst_graph[0] << "), " << worst_ratio[1]
            << " (float32, graph " << worst_graph[1] << ")\n";
}

// Every op of the graphs is in the runner's table, and the files hold graphs of 1 to 12 ops.
TEST(Differential, TableCoversTheGraphs) {
  std::set<std::string> seen;
  size_t smallest = 100, largest = 0, count = 0;
  for (const GraphFile& f : graph_files())
    for (const GraphDesc& g : f.graphs) {
      ++count;
      smallest = std::min(smallest, g.nodes.size());
      largest = std::max(largest, g.nodes.size());
      for (const Node& n : g.nodes) seen.insert(n.tokens.at(0));
    }
  for (const std::string& op : seen) EXPECT_TRUE(ops().count(op)) << op;
  for (const auto& [op, fn] : ops()) EXPECT_TRUE(seen.count(op)) << op << " is never drawn";
  EXPECT_GE(count, 1000u);
  EXPECT_EQ(smallest, 1u);
  EXPECT_EQ(largest, 12u);
}

// The checker can fail: a gradient PyTorch did not compute (the stored one
// nudged) is reported, with a graph the shrinker could not reproduce by
// finite differences (attograd is right there).
TEST(Differential, ReportsAWrongReference) {
  const GraphFile& f = graph_files().at(0);
  for (const GraphDesc& g : f.graphs) {
    if (g.grads.empty() || g.nodes.size() < 3) continue;
    GraphFile copy{f.pools, {g}};
    GraphDesc& h = copy.graphs[0];
    h.pools = &copy.pools;
    const auto& [leaf_name, offset] = *h.grads.begin();
    const std::string& leaf = leaf_name;  // a lambda captures a variable, not a binding (Clang 14)
    const Leaf& l = *std::find_if(h.leaves.begin(), h.leaves.end(),
                                  [&](const Leaf& x) { return x.name == leaf; });
    if (shape_numel(l.value.shape, "test") == 0) continue;
    copy.pools.values.at(l.value.dtype).at(static_cast<size_t>(offset)) += 0.5;
    const std::string problem = check_graph(h);
    EXPECT_NE(problem.find("d loss / d " + leaf + " differs"), std::string::npos) << problem;
    EXPECT_NE(problem.find("finite differences do not reproduce it"), std::string::npos) << problem;
    return;
  }
  FAIL() << "no graph with a gradient";
}

}  // namespace
}  // namespace ag
