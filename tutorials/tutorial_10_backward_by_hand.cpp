// Tutorial 10 — Inside backward: attention's backward written by hand.
//
// The forward of masked scaled dot-product attention in five small lines,
// then its backward in the reverse order, each line quoting the forward line
// it undoes (the way llm.c writes its backward passes). Every gradient is
// compared with what autograd computes for the same tensor, in float64, to
// 1e-12. Then the same for additive attention's tanh scores, against the
// library's AdditiveAttention module and its fused kernel.
//
// Legend: B batch, Tq queries, Tk keys, d query/key width, v value width,
//         h hidden units of additive attention.
//
// Run: build/tutorial_10_backward_by_hand [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>

#include "tutorial.h"

namespace {

// An identity op whose backward stores the gradient passing through it in
// `grad`: what PyTorch's retain_grad() gives for an intermediate tensor. It
// lets us ask autograd for dL/dS, dL/dW, ..., not only for the leaves.
ag::Tensor tap(const ag::Tensor& x, ag::Tensor& grad) {
  ag::Tensor out = x.detach();
  ag::record(out, "TapBackward", {x}, [&grad](const ag::Tensor& g) {
    grad = g;
    return ag::grads{g};
  });
  return out;
}

// Compares a gradient computed by hand with autograd's (`source` names whose),
// nn-zero-to-hero style, and checks it: max |difference| <= 1e-12 (float64).
// Returns the difference.
double compare(tut::Tutorial& t, const std::string& name, const ag::Tensor& by_hand,
               const ag::Tensor& autograd, const std::string& source = "autograd") {
  const double diff = tut::max_abs_diff(by_hand, autograd);
  t.check(name + " by hand = " + source + " to 1e-12", diff <= 1e-12,
          ag::shape_str(by_hand.shape()) + ", max |difference| " + tut::num(diff));
  return diff;
}

// The tail both kinds of attention share, from the scores S on:
//   Sm = where(keep, S, -1e6)   masked scores             [B, Tq, Tk]
//   W  = softmax(Sm, -1)        attention weights         [B, Tq, Tk]
//   O  = bmm(W, V)              output                    [B, Tq, v]
//   L  = sum(O * G)             G: the gradient the rest of a model would send back
struct TailGrads {
  ag::Tensor dO, dW, dV, dSm, dS;
};

TailGrads tail_backward(const ag::Tensor& G, const ag::Tensor& W, const ag::Tensor& V,
                        const ag::Tensor& keep) {
  ag::NoGradGuard no_grad;  // plain arithmetic on values: record nothing
  TailGrads d;
  // forward: L = sum(O * G)
  // -> each O[i] is multiplied by G[i] and summed, so dL/dO = G.
  d.dO = G;  // [B, Tq, v]
  // forward: O = bmm(W, V), i.e. O[b, i, :] = sum_j W[b, i, j] V[b, j, :]
  // -> dW[b, i, j] = dO[b, i, :] . V[b, j, :]    and    dV[b, j, :] = sum_i W[b, i, j] dO[b, i, :]
  d.dW = ag::bmm(d.dO, ag::transpose(V, 1, 2));  // [B, Tq, v] @ [B, v, Tk] -> [B, Tq, Tk]
  d.dV = ag::bmm(ag::transpose(W, 1, 2), d.dO);  // [B, Tk, Tq] @ [B, Tq, v] -> [B, Tk, v]
  // forward: W = softmax(Sm, -1)
  // -> dW_i/dSm_j = W_i (delta_ij - W_j), so dSm = W * (dW - sum(dW * W, -1))
  d.dSm = W * (d.dW - ag::sum(d.dW * W, -1, /*keepdim=*/true));  // [B, Tq, Tk]
  // forward: Sm = where(keep, S, -1e6)
  // -> kept scores pass through unchanged; masked ones were replaced by a
  //    constant, so no gradient reaches them.
  d.dS = ag::where(keep, d.dSm, 0.0);  // [B, Tq, Tk]
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 10, "Inside backward: attention's backward by hand");
  ag::manual_seed(10);

  t.step("Inputs",
         "float64 throughout, so that agreement to 1e-12 means the same formula, not "
         "luck. Queries Q [2, 3, 6], keys K [2, 5, 6], values V [2, 5, 3], valid lengths "
         "[3, 5] (item 0 masks keys 3 and 4), and G [2, 3, 3]: the gradient dL/dO that "
         "the rest of a model would send back, here random, with L = sum(O * G).");
  const ag::DType f64 = ag::kFloat64;
  const ag::Tensor Q = ag::randn({2, 3, 6}, f64).requires_grad_();  // [B, Tq, d]
  const ag::Tensor K = ag::randn({2, 5, 6}, f64).requires_grad_();  // [B, Tk, d]
  const ag::Tensor V = ag::randn({2, 5, 3}, f64).requires_grad_();  // [B, Tk, v]
  const ag::Tensor G = ag::randn({2, 3, 3}, f64);                   // [B, Tq, v]
  const ag::Tensor valid_lens = ag::tensor({3, 5}, {2}, ag::kInt64);
  const ag::Tensor keep = ag::nn::lengths_to_keep(valid_lens, {2, 3, 5});  // [B, Tq, Tk]
  const double scale = 1.0 / std::sqrt(6.0);                               // 1/sqrt(d)

  t.step("Forward, one line per op",
         "The whole of scaled dot-product attention, broken into lines small enough to "
         "differentiate one at a time:\n"
         "  S  = bmm(Q, K^T) * scale        scores          [B, Tq, Tk]\n"
         "  Sm = where(keep, S, -1e6)       masked scores   [B, Tq, Tk]\n"
         "  W  = softmax(Sm, -1)            weights         [B, Tq, Tk]\n"
         "  O  = bmm(W, V)                  output          [B, Tq, v]\n"
         "  L  = sum(O * G)                 loss            []\n"
         "Each line is wrapped in tap(), which records the gradient autograd sends through "
         "it, so that we can compare every intermediate, not only dQ, dK, dV. Then "
         "L.backward() fills them all.");
  struct {
    ag::Tensor dS, dSm, dW, dO;
  } autograd;
  const ag::Tensor S = tap(ag::bmm(Q, ag::transpose(K, 1, 2)) * scale, autograd.dS);
  const ag::Tensor Sm = tap(ag::where(keep, S, ag::nn::kD2lMaskValue), autograd.dSm);
  const ag::Tensor W = tap(ag::softmax(Sm, -1), autograd.dW);
  const ag::Tensor O = tap(ag::bmm(W, V), autograd.dO);
  const ag::Tensor L = ag::sum(O * G);
  L.backward();
  t.show("W", W);
  t.show("L", L);

  t.step("Backward, one line per forward line, in reverse",
         "Read tail_backward() in this file: each line quotes the forward line it undoes.\n"
         "  forward: L = sum(O * G)          -> dO = G\n"
         "  forward: O = bmm(W, V)           -> dW = bmm(dO, V^T), dV = bmm(W^T, dO)\n"
         "  forward: W = softmax(Sm, -1)     -> dSm = W * (dW - sum(dW * W, -1))\n"
         "  forward: Sm = where(keep, S, ..) -> dS = where(keep, dSm, 0)\n"
         "  forward: S = P * scale           -> dP = dS * scale\n"
         "  forward: P = bmm(Q, K^T)         -> dQ = bmm(dP, K), dK = bmm(dP^T, Q)\n"
         "Every gradient has the shape of the tensor it belongs to.");
  const TailGrads d = tail_backward(G, W.detach(), V.detach(), keep);
  ag::Tensor dQ, dK;
  {
    ag::NoGradGuard no_grad;
    // forward: S = bmm(Q, K^T) * scale is two ops, undone in reverse:
    //   S = P * scale       -> dP = dS * scale
    //   P = bmm(Q, K^T), i.e. P[b, i, j] = Q[b, i, :] . K[b, j, :]
    //                       -> dQ[b, i, :] = sum_j dP[b, i, j] K[b, j, :]    and
    //                          dK[b, j, :] = sum_i dP[b, i, j] Q[b, i, :]
    const ag::Tensor dP = d.dS * scale;                 // [B, Tq, Tk]
    dQ = ag::bmm(dP, K.detach());                       // [B, Tq, Tk] @ [B, Tk, d]
    dK = ag::bmm(ag::transpose(dP, 1, 2), Q.detach());  // [B, Tk, Tq] @ [B, Tq, d]
  }
  const double worst =
      std::max({tut::max_abs_diff(d.dO, autograd.dO),  // G both: L's definition, not a test
                compare(t, "dW", d.dW, autograd.dW), compare(t, "dV", d.dV, V.grad()),
                compare(t, "dSm", d.dSm, autograd.dSm), compare(t, "dS", d.dS, autograd.dS),
                compare(t, "dQ", dQ, Q.grad()), compare(t, "dK", dK, K.grad())});
  t.say(worst == 0.0 ? "Every difference is exactly 0: autograd's backward formulas (beside "
                       "each op's forward in core/src/ops_*.cpp) are these very lines."
                     : "Some differences are not exactly 0: autograd does the same arithmetic "
                       "in another order, which changes the last bits.");
  t.say(
      "The checks allow 1e-12 because the same formula evaluated in another order may "
      "round differently.");
  t.say(
      "dO = G needs no check: it is L's definition. But our lines and autograd could share "
      "a mistake, so a third opinion that knows no formula: central differences, "
      "(L(Q + eps) - L(Q - eps)) / 2 eps for every element of Q, eps = 1e-6.");
  const auto loss_at = [&](const ag::Tensor& queries) {
    ag::NoGradGuard no_grad;
    const ag::Tensor scores = ag::bmm(queries, ag::transpose(K.detach(), 1, 2)) * scale;
    const ag::Tensor weights = ag::softmax(ag::where(keep, scores, ag::nn::kD2lMaskValue), -1);
    return ag::sum(ag::bmm(weights, V.detach()) * G).item();
  };
  ag::Tensor shifted = Q.detach().clone();
  double* q_data = shifted.data_ptr<double>();
  std::vector<double> numeric(static_cast<size_t>(shifted.numel()));
  for (size_t i = 0; i < numeric.size(); ++i) {
    const double saved = q_data[i];
    q_data[i] = saved + 1e-6;
    const double plus = loss_at(shifted);
    q_data[i] = saved - 1e-6;
    const double minus = loss_at(shifted);
    q_data[i] = saved;
    numeric[i] = (plus - minus) / 2e-6;
  }
  const double numeric_diff = tut::max_abs_diff(dQ, ag::tensor(numeric, Q.shape(), f64));
  t.check("dQ by hand = central differences to 1e-7", numeric_diff < 1e-7,
          "max |difference| " + tut::num(numeric_diff));
  t.check("dS is exactly 0 at the masked scores, by hand and in autograd",
          tut::masked_weight(d.dS, keep) == 0.0 && tut::masked_weight(autograd.dS, keep) == 0.0);
  t.check("each row of dSm sums to 0 (softmax ignores a shift of its row)",
          ag::max(ag::abs(ag::sum(d.dSm, -1))).item() <= 1e-12);
  ag::viz::HeatmapOptions options;
  options.titles = {"dL/dS, item 0", "dL/dS, item 1"};
  options.colormap = ag::viz::Colormap::Diverging;
  options.keep_mask = ag::unsqueeze(keep, 0);
  t.heatmap("dscores", ag::unsqueeze(d.dS, 0), options);
  t.say(
      "The heatmap of dL/dS is signed (red up, blue down); hatched cells are the masked "
      "scores, whose gradient is exactly 0.");

  t.step("The library's module agrees",
         "ag::nn::DotProductAttention computes the same thing its own way: it divides the "
         "queries by sqrt(d) before the product and runs a fused masked-softmax kernel. Its "
         "gradients must still be ours, up to rounding (1e-12).");
  ag::nn::DotProductAttention module;
  const ag::Tensor Q2 = Q.detach().clone().requires_grad_();
  const ag::Tensor K2 = K.detach().clone().requires_grad_();
  const ag::Tensor V2 = V.detach().clone().requires_grad_();
  ag::sum(module(Q2, K2, V2, valid_lens) * G).backward();
  compare(t, "dQ", dQ, Q2.grad(), "DotProductAttention");
  compare(t, "dK", dK, K2.grad(), "DotProductAttention");
  compare(t, "dV", d.dV, V2.grad(), "DotProductAttention");

  t.step("Additive attention: forward",
         "Additive attention only changes how S is made, from queries of size 6 and keys "
         "of size 4 through h = 5 hidden units:\n"
         "  Qp = Q W_q^T                            [B, Tq, h]\n"
         "  Kp = K W_k^T                            [B, Tk, h]\n"
         "  F  = tanh(Qp[:, :, None] + Kp[:, None]) [B, Tq, Tk, h]\n"
         "  S  = sum(F * w_v, -1)                   [B, Tq, Tk]\n"
         "then the same tail. The library's AdditiveAttention never builds F (its "
         "additive_scores kernel fuses the last two lines), so we compare against its "
         "parameter gradients.");
  ag::nn::AdditiveAttention additive(/*key_size=*/4, /*query_size=*/6, /*num_hiddens=*/5);
  additive.to(f64);
  const ag::Tensor Qa = ag::randn({2, 3, 6}, f64).requires_grad_();  // [B, Tq, 6]
  const ag::Tensor Ka = ag::randn({2, 5, 4}, f64).requires_grad_();  // [B, Tk, 4]
  ag::sum(additive(Qa, Ka, V.detach(), valid_lens) * G).backward();
  const ag::Tensor Wq = additive.W_q.weight.detach();                     // [h, 6]
  const ag::Tensor Wk = additive.W_k.weight.detach();                     // [h, 4]
  const ag::Tensor wv = ag::reshape(additive.w_v.weight.detach(), {-1});  // [h]
  ag::Tensor Qp, Kp, F, Wa;
  {
    ag::NoGradGuard no_grad;
    Qp = ag::linear(Qa.detach(), Wq);                              // [B, Tq, h]
    Kp = ag::linear(Ka.detach(), Wk);                              // [B, Tk, h]
    F = ag::tanh(ag::unsqueeze(Qp, 2) + ag::unsqueeze(Kp, 1));     // [B, Tq, Tk, h]
    Wa = ag::nn::masked_softmax(ag::sum(F * wv, -1), valid_lens);  // [B, Tq, Tk]
  }
  t.check("our forward gives the module's weights",
          tut::max_abs_diff(Wa, additive.attention_weights()) <= 1e-12);

  t.step("Additive attention: backward",
         "The tail's backward is unchanged (tail_backward gives dS); then, line by line:\n"
         "  forward: S = sum(F * w_v, -1)  -> dF = dS[..., None] * w_v\n"
         "                                   dw_v = sum(dS[..., None] * F, over B, Tq, Tk)\n"
         "  forward: F = tanh(P)           -> dP = dF * (1 - F^2)\n"
         "  forward: P = Qp[:, :, None] + Kp[:, None]\n"
         "                                -> dQp = sum(dP, over Tk), dKp = sum(dP, over Tq)\n"
         "  forward: Qp = Q W_q^T          -> dQ = dQp W_q, dW_q = dQp^T Q (over B, Tq)\n"
         "  forward: Kp = K W_k^T          -> dK = dKp W_k, dW_k = dKp^T K (over B, Tk)");
  const TailGrads da = tail_backward(G, Wa, V.detach(), keep);
  ag::Tensor dQa, dKa, dWq, dWk, dwv;
  {
    ag::NoGradGuard no_grad;
    // forward: S = sum(F * w_v, -1)
    const ag::Tensor dF = ag::unsqueeze(da.dS, -1) * wv;     // [B, Tq, Tk, h]
    dwv = ag::sum(ag::unsqueeze(da.dS, -1) * F, {0, 1, 2});  // [h]
    // forward: F = tanh(P)   (tanh' = 1 - tanh^2)
    const ag::Tensor dP = dF * (1.0 - F * F);  // [B, Tq, Tk, h]
    // forward: P = Qp[:, :, None] + Kp[:, None]   (each broadcast is summed back)
    const ag::Tensor dQp = ag::sum(dP, 2);  // [B, Tq, h]
    const ag::Tensor dKp = ag::sum(dP, 1);  // [B, Tk, h]
    // forward: Qp = Q W_q^T   and   Kp = K W_k^T
    dQa = ag::matmul(dQp, Wq);  // [B, Tq, 6]
    dKa = ag::matmul(dKp, Wk);  // [B, Tk, 4]
    dWq = ag::mm(ag::transpose(ag::reshape(dQp, {-1, 5}), 0, 1),
                 ag::reshape(Qa.detach(), {-1, 6}));  // [h, 6]
    dWk = ag::mm(ag::transpose(ag::reshape(dKp, {-1, 5}), 0, 1),
                 ag::reshape(Ka.detach(), {-1, 4}));  // [h, 4]
  }
  compare(t, "dQ", dQa, Qa.grad(), "AdditiveAttention");
  compare(t, "dK", dKa, Ka.grad(), "AdditiveAttention");
  compare(t, "dW_q", dWq, additive.W_q.weight.grad(), "AdditiveAttention");
  compare(t, "dW_k", dWk, additive.W_k.weight.grad(), "AdditiveAttention");
  compare(t, "dw_v", dwv, ag::reshape(additive.w_v.weight.grad(), {-1}), "AdditiveAttention");

  t.step("Summary",
         "Backward is the forward read in reverse: each line's gradient comes from the "
         "line after it, through the derivative of one small op. The softmax line is the "
         "only subtle one, dSm = W * (dW - sum(dW * W)); masking is where(keep, ., 0); the "
         "products and the broadcast in additive attention turn into transposed products "
         "and sums.\n"
         "In the viewer: attograd-viewer --scene step shows this forward and backward one "
         "line per card (with a dropout line added), each gradient checked there by central "
         "differences.\n"
         "Next: tutorial_11_training, where these gradients train a model.");
  return t.finish();
}
