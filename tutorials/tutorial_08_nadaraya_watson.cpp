// Tutorial 8 — The Gaussian-kernel view: Nadaraya–Watson regression.
//
// Where the chapter starts: predict y at a new x by averaging the training
// targets y_i, weighted by how close x is to each x_i. With a Gaussian
// kernel those weights are a softmax of scores -(x - x_i)^2 / 2: attention
// pooling, with x as the query, the x_i as keys and the y_i as values.
//
// Run: build/tutorial_08_nadaraya_watson [--no-pause] [--out DIR]
#include <algorithm>
#include <cmath>

#include "tutorial.h"

namespace {

// The function the data comes from: f(x) = 2 sin(x) + x^0.8, elementwise
// (attograd has no sin op; the data needs no gradient).
ag::Tensor truth(const ag::Tensor& x) {
  std::vector<double> y = x.to_vector();
  for (double& v : y) v = 2 * std::sin(v) + std::pow(v, 0.8);
  return ag::tensor(y, x.shape());
}

double mse(const ag::Tensor& a, const ag::Tensor& b) {
  return ag::mse_loss(a, b).item();
}

// Gaussian-kernel attention pooling with bandwidth parameter w:
// weights[i, j] = softmax_j(-((query_i - key_j) w)^2 / 2); queries [n], keys [m] -> [n, m].
ag::Tensor kernel_weights(const ag::Tensor& queries, const ag::Tensor& keys, double w) {
  const ag::Tensor distance = ag::unsqueeze(queries, 1) - ag::unsqueeze(keys, 0);  // [n, m]
  return ag::softmax(-0.5 * (distance * w) * (distance * w), -1);
}

}  // namespace

int main(int argc, char** argv) {
  tut::Tutorial t(argc, argv, 8, "The Gaussian-kernel view: Nadaraya-Watson regression");
  ag::manual_seed(8);

  t.step("Data",
         "50 training inputs x_i in [0, 5) (one in each of 50 equal slots, so they come "
         "sorted), targets y_i = 2 sin(x_i) + x_i^0.8 plus Gaussian noise of standard "
         "deviation 0.5, and 50 test inputs 0, 0.1, ..., 4.9 where we know the noiseless "
         "truth.");
  const int64_t n = 50;
  const ag::Tensor x_train = (ag::arange(n) + ag::rand({n})) * (5.0 / n);  // [50], sorted
  const ag::Tensor y_train = truth(x_train) + 0.5 * ag::randn({n});        // [50]
  const ag::Tensor x_test = ag::arange(n) * 0.1;                           // [50]
  const ag::Tensor y_truth = truth(x_test);                                // [50]
  t.show("x_train (first 8)", ag::narrow(x_train, 0, 0, 8));
  t.show("y_train (first 8)", ag::narrow(y_train, 0, 0, 8));

  t.step("Average pooling",
         "The simplest estimator ignores x: predict the mean of all y_i everywhere. As "
         "attention, every query gives every key the weight 1/50. It is a poor fit, and "
         "its mean squared error against the truth is the number to beat.");
  const ag::Tensor y_average = ag::full({n}, ag::mean(y_train).item());  // [50]
  const double average_error = mse(y_average, y_truth);
  std::cout << "MSE of average pooling: " << tut::num(average_error, "%.3f") << "\n";

  t.step("Attention pooling with a Gaussian kernel",
         "Nadaraya and Watson weight each y_i by a kernel of the distance, normalised: "
         "f(x) = sum_i K(x - x_i) y_i / sum_j K(x - x_j). With K(u) = exp(-u^2 / 2) that "
         "is softmax over i of the scores -(x - x_i)^2 / 2: query x, keys x_i, values y_i. "
         "Scores, weights and outputs for all 50 test points at once: a [50, 50] matrix "
         "of weights times the [50] values.");
  const ag::Tensor W = kernel_weights(x_test, x_train, 1.0);  // [50 queries, 50 keys]
  const ag::Tensor y_kernel = ag::matmul(W, y_train);         // [50]
  const double kernel_error = mse(y_kernel, y_truth);
  std::cout << "    x    truth   average   kernel\n";
  for (int64_t i = 5; i < n; i += 10) {
    std::cout << tut::num(x_test.to_vector()[i], "%5.1f")
              << tut::num(y_truth.to_vector()[i], "%9.3f")
              << tut::num(y_average.to_vector()[i], "%10.3f")
              << tut::num(y_kernel.to_vector()[i], "%9.3f") << "\n";
  }
  std::cout << "MSE of kernel pooling: " << tut::num(kernel_error, "%.3f") << "\n";
  const std::vector<double> truth_values = y_truth.to_vector(),
                            kernel_values = y_kernel.to_vector();
  const double truth_peak = *std::max_element(truth_values.begin(), truth_values.end());
  const double kernel_peak = *std::max_element(kernel_values.begin(), kernel_values.end());
  std::cout << "highest value: truth " << tut::num(truth_peak, "%.3f") << " (at x = "
            << tut::num(0.1 * static_cast<double>(
                                  std::max_element(truth_values.begin(), truth_values.end()) -
                                  truth_values.begin()),
                        "%.1f")
            << "), kernel " << tut::num(kernel_peak, "%.3f") << "\n";
  t.say(
      "The kernel follows the shape of the truth but flattens its peak: a kernel of width "
      "1 averages over too wide a range. Step 5 comes back to that.");
  t.check("the kernel's highest prediction is over 0.5 below the truth's peak",
          kernel_peak < truth_peak - 0.5,
          tut::num(kernel_peak, "%.3f") + " vs " + tut::num(truth_peak, "%.3f"));
  t.check("rows of weights sum to one", tut::row_sum_error(W) < 1e-6);
  // The formula in plain loops with std::exp (tutorial.h's softmax_by_loops).
  const std::vector<double> xs_test = x_test.to_vector(), xs_train = x_train.to_vector();
  std::vector<double> gauss_scores(static_cast<size_t>(n * n));
  for (size_t i = 0; i < xs_test.size(); ++i)
    for (size_t j = 0; j < xs_train.size(); ++j)
      gauss_scores[i * xs_train.size() + j] = -0.5 * std::pow(xs_test[i] - xs_train[j], 2);
  const double kernel_diff =
      tut::max_abs_diff(W, tut::softmax_by_loops(ag::tensor(gauss_scores, {n, n})));
  t.check("W[i, j] = K(x_i - x_j) / sum_k K(x_i - x_k), by loops", kernel_diff < 1e-6,
          "max |difference| " + tut::num(kernel_diff));
  t.check("kernel pooling has under 60% of average pooling's error",
          kernel_error < 0.6 * average_error,
          tut::num(kernel_error, "%.3f") + " vs " + tut::num(average_error, "%.3f"));
  const ag::Tensor nearest =
      ag::argmax(-ag::abs(ag::unsqueeze(x_test, 1) - ag::unsqueeze(x_train, 0)), -1);
  t.check("each query's largest weight is on its nearest training input",
          ag::sum(ag::ne(ag::argmax(W, -1), nearest).to(ag::kInt64)).item() == 0);
  ag::viz::HeatmapOptions options;
  options.xlabel = "training inputs (sorted)";
  options.ylabel = "test inputs";
  options.cell_size = 6;
  t.heatmap("kernel_weights", ag::reshape(W, {1, 1, n, n}), options);
  t.say(
      "The heatmap is a band along the diagonal: each test input attends to the training "
      "inputs near it.");

  t.step("The kernel is a dot product with a bias per key",
         "Expand the score: -(q - k)^2 / 2 = q k - k^2 / 2 - q^2 / 2. The last term is the "
         "same for every key, and softmax ignores anything added to a whole row. So the "
         "Gaussian kernel is the dot-product score q k plus a bias -k^2 / 2 per key: the "
         "chapter's scoring functions are this idea with vectors and learned maps.");
  const ag::Tensor dot_scores = ag::unsqueeze(x_test, 1) * ag::unsqueeze(x_train, 0) -
                                0.5 * ag::unsqueeze(x_train * x_train, 0);  // [50, 50]
  t.check("softmax(q k - k^2 / 2) equals the kernel weights",
          tut::max_abs_diff(ag::softmax(dot_scores, -1), W) < 1e-6,
          "max |difference| " + tut::num(tut::max_abs_diff(ag::softmax(dot_scores, -1), W)));

  t.step("The bandwidth",
         "Put a width parameter w in the score: -((x - x_i) w)^2 / 2. A small w widens the "
         "kernel until every point gets the same weight (average pooling again); a large w "
         "narrows it until each test point copies its nearest noisy y_i. d2l learns w by "
         "gradient descent; here we try three values.");
  std::vector<ag::Tensor> maps;
  std::vector<double> errors;
  for (const double w : {0.2, 2.0, 20.0}) {
    maps.push_back(kernel_weights(x_test, x_train, w));
    errors.push_back(mse(ag::matmul(maps.back(), y_train), y_truth));
    std::cout << "w = " << tut::num(w, "%4.1f") << ": MSE " << tut::num(errors.back(), "%.3f")
              << "\n";
  }
  t.check("a middle bandwidth beats both extremes", errors[1] < errors[0] && errors[1] < errors[2]);
  // The two limits the text names. w = 0: every score is 0, every weight 1/50.
  t.check(
      "w = 0 gives every key the weight 1/50: average pooling",
      tut::max_abs_diff(kernel_weights(x_test, x_train, 0.0), ag::full({n, n}, 1.0 / n)) < 1e-7);
  // w -> infinity: each row becomes one-hot on the nearest x_i, so the
  // prediction is that point's noisy y_i. (At w = 20 a test point halfway
  // between two x_i still splits its weight; w = 1000 is near the limit.)
  const ag::Tensor narrowest = kernel_weights(x_test, x_train, 1000.0);
  std::vector<double> nearest_y;
  for (const double index : nearest.to_vector())
    nearest_y.push_back(y_train.to_vector()[static_cast<size_t>(index)]);
  const double copy_diff =
      tut::max_abs_diff(ag::matmul(narrowest, y_train), ag::tensor(nearest_y, {n}));
  t.check("w = 1000: each prediction is its nearest training point's y_i", copy_diff < 1e-3,
          "max |difference| " + tut::num(copy_diff));
  t.check("w = 20: the largest weight is nearly 1", ag::max(maps[2]).item() > 0.99,
          tut::num(ag::max(maps[2]).item(), "%.4f"));
  options.titles = {"w = 0.2 (wide)", "w = 2", "w = 20 (narrow)"};
  options.vmin = 0;
  options.vmax = 0.1;  // clips the narrow kernel's weights so the wide ones stay visible
  t.heatmap("bandwidths", ag::reshape(ag::stack(maps), {1, 3, n, n}), options);
  t.say(
      "The colour scale of this heatmap stops at 0.1: the narrow kernel's weights go up "
      "to 1 and would otherwise leave the other two maps black.");

  t.step("Summary",
         "Attention pooling is a weighted average of values, with weights from a softmax "
         "of query-key scores. The Gaussian kernel's score is a dot product plus a bias per "
         "key; its width decides between averaging everything and copying the nearest "
         "point.\n"
         "In the viewer: attograd-viewer --scene training --set training.task=nadaraya-watson "
         "learns the kernel's width live.\n"
         "Next: tutorial_09_multihead.");
  return t.finish();
}
