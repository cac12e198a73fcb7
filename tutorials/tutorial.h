// tutorial.h — what every tutorial program shares, and nothing more:
// numbered steps that wait for Enter, a tensor printed with its shape,
// heatmaps written as .png and .svg, and checks of the numbers the chapter
// predicts.
//
//   int main(int argc, char** argv) {
//     tut::Tutorial t(argc, argv, 2, "Masked softmax");
//     t.step("Plain softmax", "What this step computes, and why.");
//     ag::Tensor w = ag::softmax(ag::rand({2, 4}), -1);
//     t.show("w", w);                                    // name, shape, values
//     t.check("rows sum to one", tut::row_sum_error(w) < 1e-6);  // "check: ... ok"
//     t.heatmap("weights", ag::reshape(w, {1, 1, 2, 4}));  // DIR/02_weights.png and .svg
//     t.alignment("date", translation, "additive", "Source", "Output");  // a translation's
//     return t.finish();                                 // 1 if any check failed
//   }
//
// Command line of every tutorial: --no-pause runs straight through (ctest
// does); --out DIR is where heatmaps go (default tutorial-output/, created
// with the first heatmap).
#pragma once

#include <attograd/attograd.h>
#include <attograd/translate/predict.h>
#include <attograd/viz.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace tut {

// max |a - b| over all elements (a and b broadcast); 0 for identical tensors.
inline double max_abs_diff(const ag::Tensor& a, const ag::Tensor& b) {
  return ag::max(ag::abs(a.detach() - b.detach())).item();
}

// max |sum(w, -1) - 1|: how far the rows of attention weights are from summing to one.
inline double row_sum_error(const ag::Tensor& weights) {
  const ag::Tensor sums = ag::sum(weights.detach(), -1);
  return max_abs_diff(sums, ag::ones_like(sums));
}

// max |w| where the bool `keep` (broadcastable to w) is false: the weight
// that leaked onto masked keys, exactly 0 when masking works.
inline double masked_weight(const ag::Tensor& weights, const ag::Tensor& keep) {
  return ag::max(ag::abs(ag::where(ag::logical_not(keep), weights.detach(), 0.0))).item();
}

// x W^T by loops over the plain numbers, with no ag op: x [..., in],
// W [out, in] -> [..., out], in x's dtype (d2l's attention projections have
// no bias).
inline ag::Tensor linear_by_loops(const ag::Tensor& x, const ag::Tensor& W) {
  const int64_t in = W.size(1), out = W.size(0), rows = x.numel() / in;
  const std::vector<double> xs = x.to_vector(), ws = W.to_vector();
  std::vector<double> y(static_cast<size_t>(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i)
        y[static_cast<size_t>(r * out + o)] +=
            xs[static_cast<size_t>(r * in + i)] * ws[static_cast<size_t>(o * in + i)];
  ag::Shape shape = x.shape();
  shape.back() = out;
  return ag::tensor(y, shape, x.dtype());
}

// Softmax of w[0, valid) in place, by loops: exp(w_j - max) / sum, with the
// entries from valid to n set to 0 (masked keys; a row with no valid entry
// is all 0).
inline void softmax_in_place(double* w, int64_t n, int64_t valid) {
  double largest = -1e300, total = 0;
  for (int64_t j = 0; j < valid; ++j) largest = std::max(largest, w[j]);
  for (int64_t j = 0; j < valid; ++j) total += (w[j] = std::exp(w[j] - largest));
  for (int64_t j = 0; j < valid; ++j) w[j] /= total;
  for (int64_t j = valid; j < n; ++j) w[j] = 0;
}

// Softmax over the last axis by loops over the plain numbers, with no ag op:
// row r keeps its first valid[r] entries (every entry when `valid` is
// empty), as softmax_in_place. scores [..., T] -> the same shape and dtype.
inline ag::Tensor softmax_by_loops(const ag::Tensor& scores,
                                   const std::vector<int64_t>& valid = {}) {
  const int64_t n = scores.size(-1), rows = scores.numel() / n;
  std::vector<double> w = scores.to_vector();
  for (int64_t r = 0; r < rows; ++r)
    softmax_in_place(w.data() + r * n, n, valid.empty() ? n : valid[static_cast<size_t>(r)]);
  return ag::tensor(w, scores.shape(), scores.dtype());
}

// Scaled dot-product attention by loops over the plain numbers, with no ag
// op: weights[b, i, j] = softmax over j < valid_lens[b] of q_i . k_j * scale
// (every key when valid_lens is empty; the keys past it get 0), and
// output = weights @ v. q [B, Tq, d], k [B, Tk, d], v [B, Tk, dv]. A check
// against it fails when the library's bmm or softmax is wrong, which a check
// against the library's own ops (wrong the same way) could not.
struct LoopAttention {
  ag::Tensor weights, output;  // [B, Tq, Tk], [B, Tq, dv], in q's dtype
};
inline LoopAttention attention_by_loops(const ag::Tensor& q, const ag::Tensor& k,
                                        const ag::Tensor& v, double scale,
                                        const std::vector<int64_t>& valid_lens = {}) {
  const int64_t B = q.size(0), Tq = q.size(1), Tk = k.size(1), d = q.size(2), dv = v.size(2);
  const std::vector<double> qs = q.to_vector(), ks = k.to_vector(), vs = v.to_vector();
  std::vector<double> weights(static_cast<size_t>(B * Tq * Tk), 0.0);
  std::vector<double> output(static_cast<size_t>(B * Tq * dv), 0.0);
  const auto at = [](int64_t i) { return static_cast<size_t>(i); };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t valid = valid_lens.empty() ? Tk : valid_lens[at(b)];
    for (int64_t i = 0; i < Tq; ++i) {
      double* w = weights.data() + at((b * Tq + i) * Tk);
      for (int64_t j = 0; j < valid; ++j) {
        double dot = 0;
        for (int64_t x = 0; x < d; ++x)
          dot += qs[at((b * Tq + i) * d + x)] * ks[at((b * Tk + j) * d + x)];
        w[j] = dot * scale;
      }
      softmax_in_place(w, Tk, valid);
      for (int64_t j = 0; j < valid; ++j)
        for (int64_t x = 0; x < dv; ++x)
          output[at((b * Tq + i) * dv + x)] += w[j] * vs[at((b * Tk + j) * dv + x)];
    }
  }
  return {ag::tensor(weights, {B, Tq, Tk}, q.dtype()), ag::tensor(output, {B, Tq, dv}, q.dtype())};
}

// printf-style number formatting, e.g. num(0.5, "%.3f") -> "0.500".
inline std::string num(double value, const char* format = "%.4g") {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

class Tutorial {
 public:
  Tutorial(int argc, char** argv, int number, const std::string& title) : number_(number) {
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--no-pause") {
        pause_ = false;
      } else if (arg == "--out" && i + 1 < argc) {
        out_dir_ = argv[++i];
      } else {
        std::cerr << "usage: " << argv[0] << " [--no-pause] [--out DIR]\n";
        std::exit(2);
      }
    }
    std::cout << "Tutorial " << number_ << ": " << title << "\n";
    say("(Enter moves to the next step; --no-pause runs straight through. Heatmaps go to " +
        out_dir_ + "/, or to --out DIR.)");
  }

  // Starts the next numbered step: waits for Enter after the previous one,
  // then prints the banner and `text` (what this step computes, and why),
  // wrapped to 78 columns; "\n" in `text` starts a new paragraph, and a
  // paragraph indented by two spaces (code, a table) is printed as is.
  void step(const std::string& title, const std::string& text) {
    if (steps_ > 0) pause();
    ++steps_;
    std::cout << "\n== Step " << steps_ << ": " << title << " ==\n";
    say(text);
  }

  // Prose between results, wrapped like a step's text.
  void say(const std::string& text) const {
    std::istringstream paragraphs(text);
    for (std::string paragraph; std::getline(paragraphs, paragraph);) {
      if (paragraph.rfind("  ", 0) == 0) {  // indented: code or a table, printed as is
        std::cout << paragraph << "\n";
        continue;
      }
      // A shape such as [2, 1, 6] is never split across lines: its spaces
      // become \x01 until printed. ("[0, 5)" is an interval, not a shape.)
      for (size_t open = paragraph.find('['); open != std::string::npos;
           open = paragraph.find('[', open + 1)) {
        const size_t close = paragraph.find_first_of("[]()", open + 1);
        if (close != std::string::npos && paragraph[close] == ']' && close - open < 40) {
          std::replace(paragraph.begin() + open, paragraph.begin() + close, ' ', '\x01');
        }
      }
      std::istringstream words(paragraph);
      size_t column = 0;
      for (std::string word; words >> word; column += word.size()) {
        if (column > 0 && column + 1 + word.size() > 78) {
          std::cout << "\n";
          column = 0;
        } else if (column > 0) {
          std::cout << " ";
          ++column;
        }
        std::replace(word.begin(), word.end(), '\x01', ' ');
        std::cout << word;
      }
      std::cout << "\n";
    }
  }

  // "name [2, 1, 4]" and then the tensor as PyTorch would print it.
  void show(const std::string& name, const ag::Tensor& t) const {
    std::cout << name << " " << ag::shape_str(t.shape()) << "\n" << t << "\n";
  }

  // Writes `matrices` ([rows, cols, Tq, Tk] or [..., Tq, Tk]) to
  // OUT/NN_stem.png and OUT/NN_stem.svg (NN = the tutorial's number),
  // creating the folder OUT when missing.
  void heatmap(const std::string& stem, const ag::Tensor& matrices,
               const ag::viz::HeatmapOptions& options = {}) const {
    std::filesystem::create_directories(out_dir_);
    const std::string base =
        out_dir_ + "/" + (number_ < 10 ? "0" : "") + std::to_string(number_) + "_" + stem;
    ag::viz::show_heatmaps(matrices.detach(), base + ".png", options);
    ag::viz::show_heatmaps(matrices.detach(), base + ".svg", options);
    std::cout << "heatmap: " << base << ".png (and .svg)\n";
  }

  // A translation's alignment ([output tokens, source tokens]) as heatmap
  // `stem`, the tokens as tick labels, weights on a 0-to-1 scale.
  void alignment(const std::string& stem, const ag::translate::Translation& translation,
                 const std::string& title, const std::string& xlabel,
                 const std::string& ylabel) const {
    ag::viz::HeatmapOptions options;
    options.xlabel = xlabel;
    options.ylabel = ylabel;
    options.titles = {title};
    options.xticklabels = translation.source_tokens;
    options.yticklabels = translation.output_tokens;
    options.vmin = 0.0;
    options.vmax = 1.0;
    const int64_t rows = translation.alignment.size(0), cols = translation.alignment.size(1);
    heatmap(stem, ag::reshape(translation.alignment, {1, 1, rows, cols}), options);
  }

  // Prints "check: <what> ... ok" or "... FAILED", with `detail` (the
  // measured numbers) in parentheses; finish() fails if any check did.
  bool check(const std::string& what, bool ok, const std::string& detail = "") {
    ++checks_;
    if (!ok) ++failed_;
    std::cout << "check: " << what << " ... " << (ok ? "ok" : "FAILED")
              << (detail.empty() ? "" : " (" + detail + ")") << "\n";
    return ok;
  }

  // The exit code of main(): 0 when every check passed.
  int finish() const {
    if (failed_ == 0) {
      std::cout << "\nAll " << checks_ << " checks passed.\n";
      return 0;
    }
    std::cout << "\n" << failed_ << " of " << checks_ << " checks FAILED.\n";
    return 1;
  }

 private:
  void pause() const {
    if (!pause_) return;
    std::cout << "\n-- press Enter for step " << steps_ + 1 << " --" << std::flush;
    std::string line;
    std::getline(std::cin, line);
  }

  int number_;
  bool pause_ = true;
  std::string out_dir_ = "tutorial-output";
  int steps_ = 0;
  int checks_ = 0;
  int failed_ = 0;
};

}  // namespace tut
