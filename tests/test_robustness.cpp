// Hostile input: one test per class of defect that the robustness review
// found. Each class was fixed in one place; these tests pin the promise of
// the README: bad input gets an ag::Error naming the op, never a crash,
// undefined behaviour or a silent wrong answer.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

#include "test_util.h"

// The out-of-memory tests below need ASan's allocator_may_return_null=1
// (test_util.cpp sets it for every test program).

namespace ag {
namespace {

using testing::bools;
using testing::lens;
using testing::throws_error;

constexpr int64_t k2To40 = int64_t{1} << 40;
constexpr int64_t k2To62 = int64_t{1} << 62;

// A version 1.0 .npy file of float32 `values` whose header gives `shape`
// (written as Python would, e.g. "(2, 3)").
std::vector<uint8_t> npy_file(const std::string& shape, const std::vector<float>& values = {}) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header.append(117 - header.size(), ' ');
  // Appended piece by piece: GCC 12 at -O3 warns (-Warray-bounds, a false
  // positive) on the inlined copies of "literal" + header + "\n".
  std::string file("\x93NUMPY\x01\x00\x76\x00", 10);
  file += header;
  file += '\n';
  file.append(reinterpret_cast<const char*>(values.data()), sizeof(float) * values.size());
  return std::vector<uint8_t>(file.begin(), file.end());
}

// ---- 1. element and byte counts ------------------------------------------------------

TEST(RobustnessTest, ElementAndByteCountsAreCheckedOnce) {
  // 2^62 float32 elements: the byte count would wrap to 0.
  EXPECT_TRUE(throws_error([] { ones({k2To62}); }, {"ones", "too many elements", "[4611686"}));
  EXPECT_TRUE(throws_error([] { zeros({k2To40, k2To40}); }, {"zeros", "too many elements"}));
  // A size-0 dim does not hide the others: the strides would still overflow.
  EXPECT_TRUE(throws_error([] { zeros({0, k2To40, k2To40}); }, {"zeros", "too many elements"}));
  EXPECT_TRUE(throws_error([] { randn({k2To62}); }, {"randn", "too many elements"}));
  EXPECT_TRUE(throws_error([] { tensor({}, {k2To62, 0}); }, {"tensor", "too many elements"}));
  // Views.
  EXPECT_TRUE(throws_error(
      [] {
        reshape(ones({1}), {k2To40, k2To40});
      },
      {"reshape", "too many elements"}));
  EXPECT_TRUE(throws_error(
      [] {
        reshape(zeros({0}), {k2To40, -1, k2To40});
      },
      {"reshape", "too many elements"}));
  EXPECT_TRUE(throws_error(
      [] {
        expand(ones({1, 1}), {k2To40, k2To40});
      },
      {"expand", "too many elements"}));
  // Broadcasting two legal views into an illegal result.
  EXPECT_TRUE(throws_error(
      [] {
        const Tensor column = expand(ones({1, 1}), {k2To40, 1});
        const Tensor row = expand(ones({1, 1}), {1, k2To40});
        add(column, row);
      },
      {"add", "too many elements"}));
  EXPECT_TRUE(throws_error(
      [] {
        const Tensor big = expand(ones({1}), {int64_t{1} << 59});
        cat({big, big, big}, 0);
      },
      {"cat", "too many elements"}));
  EXPECT_TRUE(throws_error([] { repeat_interleave(ones({2}), int64_t{1} << 60, 0); },
                           {"repeat_interleave", "too many elements"}));
  // Modules.
  EXPECT_TRUE(throws_error([] { nn::Linear(k2To40, k2To40); }, {"Linear", "too many elements"}));
  EXPECT_TRUE(throws_error([] { nn::MultiHeadAttention(4, k2To40, 4, k2To40, 2); },
                           {"Linear", "too many elements"}));
  // Files: a header whose shape multiplies past 2^60.
  const std::vector<uint8_t> file = npy_file("(1099511627776, 1099511627776)");
  EXPECT_TRUE(throws_error([&] { parse_npy(file.data(), file.size()); },
                           {"parse_npy", "too many elements"}));
  // The largest legal shape is still a shape (as a view).
  EXPECT_EQ(expand(ones({1}), {int64_t{1} << 60}).numel(), int64_t{1} << 60);
}

// ---- 2. only ag::Error leaves the public API ---------------------------------------

TEST(RobustnessTest, OnlyAgErrorLeavesTheApi) {
  // Negative sizes used to reach std::vector (std::length_error).
  EXPECT_TRUE(throws_error([] { randn({-1}); }, {"randn", "negative dimension", "[-1]"}));
  EXPECT_TRUE(throws_error([] { rand({2, -3}); }, {"rand", "negative dimension"}));
  EXPECT_TRUE(throws_error([] { uniform({-1}, 0, 1); }, {"uniform", "negative dimension"}));
  EXPECT_TRUE(throws_error([] { tensor({1}, {-1}); }, {"tensor", "negative dimension"}));
  EXPECT_TRUE(throws_error([] { full({-1}, 2.0); }, {"full", "negative dimension"}));
  // Representable but impossible sizes used to throw std::bad_alloc.
  constexpr int64_t huge = int64_t{1} << 56;
  for (const auto& [name, make] : std::vector<std::pair<std::string, std::function<void()>>>{
           {"zeros", [] { zeros({huge}); }},
           {"ones", [] { ones({huge}); }},
           {"full", [] { full({huge}, 1.0); }},
           {"rand", [] { rand({huge}); }},
           {"randn", [] { randn({huge}); }},
           {"uniform", [] { uniform({huge}, 0, 1); }},
           {"arange", [] { arange(huge); }},
       })
    EXPECT_TRUE(throws_error(make, {name, "out of memory"})) << name;
  EXPECT_TRUE(
      throws_error([] { nn::Linear(int64_t{1} << 28, int64_t{1} << 28); }, {"out of memory"}));
  EXPECT_TRUE(throws_error([] { nn::keras::AdditiveAttention layer(huge); }, {"out of memory"}));
  EXPECT_TRUE(throws_error([] { expand(ones({1}), {huge}).contiguous(); }, {"out of memory"}));
  // A file too big to read (sparse: it takes no disk space).
  const std::string path = std::filesystem::temp_directory_path() / "attograd_huge_sparse.npy";
  std::ofstream(path).put('\x93');
  std::error_code error;
  std::filesystem::resize_file(path, std::uintmax_t{1} << 42, error);
  if (!error) {
    EXPECT_TRUE(throws_error([&] { load_npy(path); }, {"load_npy", "out of memory"}));
    EXPECT_TRUE(throws_error([&] { load_npz(path); }, {"load_npz", "out of memory"}));
  }
  std::filesystem::remove(path);
}

// ---- 3. 0-d tensors -------------------------------------------------------------------

TEST(RobustnessTest, ZeroDimTensorsHaveNoSizes) {
  const Tensor s = scalar_tensor(1.0);
  EXPECT_TRUE(throws_error([&] { s.size(0); }, {"size", "0-d"}));
  EXPECT_TRUE(throws_error([&] { s.size(-1); }, {"size", "0-d"}));
  // The dim-taking ops still accept dim 0 / -1 for a 0-d tensor, as PyTorch.
  EXPECT_EQ(sum(s, 0).item(), 1.0);
  EXPECT_EQ(softmax(s, -1).item(), 1.0);
  EXPECT_EQ(max(s, 0).item(), 1.0);
  EXPECT_TRUE(throws_error([&] { cat({s, s}, 0); }, {"cat", "0-d"}));
  EXPECT_TRUE(
      throws_error([&] { nn::DotProductAttention()(s, s, s); }, {"DotProductAttention", "3-D"}));
}

// ---- 4. empty tensors -----------------------------------------------------------------

TEST(RobustnessTest, EmptyTensorsAreLegal) {
  const Tensor z = zeros({2, 0}).requires_grad_();
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_EQ(reshape(z, {0, 5}).shape(), (Shape{0, 5}));
  EXPECT_EQ(view(z, {0}).shape(), (Shape{0}));
  EXPECT_EQ(flatten(z).shape(), (Shape{0}));
  EXPECT_EQ(sum(z, 1).to_vector(), (std::vector<double>{0, 0}));
  EXPECT_EQ(sum(z, 0).shape(), (Shape{0}));
  sum(sum(z, 1)).backward();
  EXPECT_EQ(z.grad().shape(), (Shape{2, 0}));
  // Attention with no queries, and with no keys.
  nn::DotProductAttention attention;
  const Tensor none = attention(zeros({2, 0, 3}), ones({2, 4, 3}), ones({2, 4, 5}));
  EXPECT_EQ(none.shape(), (Shape{2, 0, 5}));
  const Tensor q = ones({2, 3, 3}).requires_grad_();
  const Tensor no_keys = attention(q, zeros({2, 0, 3}), zeros({2, 0, 5}), lens({0, 0}));
  EXPECT_EQ(no_keys.shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(sum(no_keys).item(), 0.0);
  sum(no_keys).backward();
  EXPECT_EQ(sum(q.grad()).item(), 0.0);
  nn::MultiHeadAttention mha(3, 3, 3, 4, 2);
  EXPECT_EQ(mha(zeros({1, 0, 3}), ones({1, 2, 3}), ones({1, 2, 3})).shape(), (Shape{1, 0, 4}));
  EXPECT_EQ(nn::functional::scaled_dot_product_attention(zeros({1, 0, 3}), ones({1, 2, 3}),
                                                         ones({1, 2, 3}), Tensor(), 0.0, true)
                .shape(),
            (Shape{1, 0, 3}));
}

// ---- 5. int64 overflow wraps (two's complement) ------------------------------------------

TEST(RobustnessTest, Int64ArithmeticWrapsAround) {
  constexpr int64_t max = std::numeric_limits<int64_t>::max();
  constexpr int64_t min = std::numeric_limits<int64_t>::min();
  auto i64 = [](std::initializer_list<int64_t> values) {
    Tensor t = zeros({static_cast<int64_t>(values.size())}, kInt64);
    std::copy(values.begin(), values.end(), t.data_ptr<int64_t>());
    return t;
  };
  auto first = [](const Tensor& t) { return t.contiguous().data_ptr<int64_t>()[0]; };
  EXPECT_EQ(first(add(i64({max}), i64({1}))), min);
  EXPECT_EQ(first(sub(i64({min}), i64({1}))), max);
  EXPECT_EQ(first(mul(i64({int64_t{1} << 62}), i64({4}))), 0);
  EXPECT_EQ(first(mul(i64({max}), i64({max}))), 1);
  EXPECT_EQ(first(neg(i64({min}))), min);
  EXPECT_EQ(first(abs(i64({min}))), min);
  EXPECT_EQ(first(sum(i64({max, 1}))), min);
  EXPECT_EQ(first(div(i64({min}), i64({-1}))), min);  // was SIGFPE
  EXPECT_EQ(first(div(i64({7}), i64({-1}))), -7);
  EXPECT_EQ(first(i64({max}) + 1.0), min);
  EXPECT_TRUE(throws_error([&] { div(i64({1}), i64({0})); }, {"div", "division by zero"}));
}

// ---- 6. freeing deep graphs that use a tensor twice -----------------------------------------

TEST(RobustnessTest, FreeingDeepGraphsNeverRecurses) {
  const Tensor x = scalar_tensor(1.0).requires_grad_();
  {
    Tensor y = x;
    for (int i = 0; i < 100000; ++i) y = y * y;  // every MulBackward holds y twice
  }
  {
    Tensor y = x;
    for (int i = 0; i < 50000; ++i) y = i % 2 ? y + y : where(bools({1}, {1}), y, y);
  }
  {
    // A backward through a long chain of shared inputs, then the teardown.
    Tensor y = x;
    for (int i = 0; i < 10000; ++i) y = (y + y) * 0.5;
    y.backward();
    EXPECT_EQ(x.grad().item(), 1.0);
  }
}

// ---- 7. in-place writes between forward and backward -----------------------------------------

TEST(RobustnessTest, InPlaceWritesInvalidateRecordedGraphs) {
  manual_seed(7);
  nn::Linear layer(3, 2);
  const Tensor x = randn({4, 3});
  optim::SGD sgd(layer.parameters(), 0.1);
  const uint64_t before = layer.weight.version();
  sum(layer(x)).backward();
  sgd.step();
  EXPECT_EQ(layer.weight.version(), before + 1);
  // A graph recorded before the step would mix old and new weights.
  Tensor stale = sum(layer(x));
  sgd.step();
  EXPECT_TRUE(throws_error([&] { stale.backward(); },
                           {"backward", "LinearBackward", "[2, 3]", "modified in place"}));
  // load_state_dict too, and a view of the parameter is the same storage.
  Tensor viewed = sum(reshape(layer.weight, {6}) * 2.0);
  layer.load_state_dict(layer.state_dict());
  EXPECT_TRUE(throws_error([&] { viewed.backward(); }, {"backward", "modified in place"}));
  // Recording again after the write is the fix.
  layer.zero_grad();
  sum(layer(x)).backward();
  EXPECT_TRUE(layer.weight.grad().defined());
  // Adam bumps as well.
  optim::Adam adam(layer.parameters(), 0.1);
  Tensor stale_adam = sum(layer(x));
  adam.step();
  EXPECT_TRUE(throws_error([&] { stale_adam.backward(); }, {"modified in place"}));
}

// ---- 8. gradients are their own buffers -----------------------------------------------------

TEST(RobustnessTest, LeafGradientsDoNotAlias) {
  const Tensor a = zeros({3}).requires_grad_();
  const Tensor b = zeros({3}).requires_grad_();
  const Tensor seed = tensor({1, 2, 3});
  (a + b).backward(seed);
  EXPECT_NE(a.grad().data_ptr<float>(), b.grad().data_ptr<float>());
  EXPECT_NE(a.grad().data_ptr<float>(), seed.data_ptr<float>());
  EXPECT_NE(b.grad().data_ptr<float>(), seed.data_ptr<float>());
  a.grad().data_ptr<float>()[0] = 100;  // clip one gradient in place
  EXPECT_EQ(b.grad().to_vector(), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(seed.to_vector(), (std::vector<double>{1, 2, 3}));
  // A leaf seeded directly does not adopt the caller's seed either.
  const Tensor c = zeros({3}).requires_grad_();
  c.backward(seed);
  EXPECT_NE(c.grad().data_ptr<float>(), seed.data_ptr<float>());
  // Pass-through gradients (clone, expand, view) are copied too.
  const Tensor d = zeros({3}).requires_grad_();
  const Tensor out = reshape(d, {3, 1});
  const Tensor g = ones({3, 1});
  out.backward(g);
  EXPECT_NE(d.grad().data_ptr<float>(), g.data_ptr<float>());
}

// ---- 9. backward is linear in its input size ----------------------------------------------

TEST(RobustnessTest, CatBackwardIsLinearInTheNumberOfInputs) {
  const int n = 100000;
  std::vector<Tensor> leaves;
  leaves.reserve(n);
  for (int i = 0; i < n; ++i) leaves.push_back(ones({1}).requires_grad_());
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const Tensor total = sum(cat(leaves, 0));
  const auto forward_end = Clock::now();
  total.backward();
  const auto backward_end = Clock::now();
  EXPECT_EQ(leaves[n - 1].grad().item(), 1.0);
  // Timed against the forward on the same machine, so load and sanitizers
  // cancel out: linear, the backward (a slice and a gradient per input) costs
  // 2-5 forwards; quadratic (a copy of all of g per input) it cost 130.
  const double forward = std::chrono::duration<double>(forward_end - start).count();
  const double backward = std::chrono::duration<double>(backward_end - forward_end).count();
  EXPECT_LT(backward, 25 * forward + 0.05) << "forward " << forward << " s";
  std::cout << "forward " << forward << " s, backward " << backward << " s\n";
}

// ---- 10. masked softmax with extreme mask values ---------------------------------------------

TEST(RobustnessTest, MaskValuesBeyondTheDtypeNeverGiveNaN) {
  const Tensor scores = tensor({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor keep = bools({1, 0, 1, 0, 0, 0}, {2, 3});  // row 1 fully masked
  for (const double fill : {-1e300, -std::numeric_limits<double>::infinity()}) {
    for (const DType dtype : {kFloat32, kFloat64}) {
      const Tensor w =
          nn::masked_softmax_keep(scores.to(dtype), keep, nn::MaskedRows::Uniform, fill);
      EXPECT_FALSE(testing::has_nan(w)) << fill;
      EXPECT_TRUE(testing::all_close(
          w, {1 / (1 + std::exp(2.0)), 0, 1 / (1 + std::exp(-2.0)), 1 / 3.0, 1 / 3.0, 1 / 3.0}));
    }
    const Tensor w = nn::masked_softmax(scores, lens({2, 0}), fill);
    EXPECT_FALSE(testing::has_nan(w)) << fill;
  }
  EXPECT_TRUE(
      throws_error([&] { nn::masked_softmax_keep(scores, keep, nn::MaskedRows::Zero, NAN); },
                   {"masked_softmax", "NaN"}));
  EXPECT_TRUE(throws_error(
      [&] {
        nn::masked_softmax(scores, lens({1, 1}), NAN);
      },
      {"masked_softmax", "NaN"}));
  // float64 scores far below float32's range still beat the masked keys
  // under the default (lowest finite) fill...
  const Tensor low = tensor({-1e300, 0}, {1, 2}, kFloat64);
  const Tensor w = nn::masked_softmax_keep(low, bools({1, 0}, {1, 2}), nn::MaskedRows::Uniform);
  EXPECT_EQ(w.to_vector(), (std::vector<double>{1, 0}));
  // ...while d2l's -1e6 fill loses to them, as the book's code does (documented).
  const Tensor d2l = nn::masked_softmax(tensor({-1e7, 0}, {1, 2}, kFloat64), lens({1}));
  EXPECT_EQ(d2l.to_vector(), (std::vector<double>{0, 1}));
}

// ---- 11. load_state_dict is all or nothing -----------------------------------------------------

TEST(RobustnessTest, LoadStateDictIsAtomic) {
  manual_seed(11);
  nn::Linear layer(2, 2);
  const std::vector<double> weight = layer.weight.to_vector();
  // A parameter replaced by a non-contiguous tensor makes the second entry fail.
  layer.bias = expand(zeros({1}), {2}).requires_grad_();
  const std::map<std::string, Tensor> state = {{"weight", ones({2, 2})}, {"bias", ones({2})}};
  EXPECT_TRUE(throws_error([&] { layer.load_state_dict(state); },
                           {"Linear.load_state_dict", "'bias'", "not contiguous"}));
  EXPECT_EQ(layer.weight.to_vector(), weight);  // untouched
  // Entries that are this module's own parameters, under swapped names.
  nn::AdditiveAttention attention(3, 3, 4);
  const std::vector<double> k = attention.W_k.weight.to_vector();
  const std::vector<double> q = attention.W_q.weight.to_vector();
  std::map<std::string, Tensor> swapped = attention.state_dict();
  std::swap(swapped["W_k.weight"], swapped["W_q.weight"]);
  attention.load_state_dict(swapped);
  EXPECT_EQ(attention.W_k.weight.to_vector(), q);
  EXPECT_EQ(attention.W_q.weight.to_vector(), k);
}

// ---- 12. thread counts ------------------------------------------------------------------------

TEST(RobustnessTest, ThreadCountIsBounded) {
  const int previous = get_num_threads();
  EXPECT_TRUE(throws_error([] { set_num_threads(1 << 30); },
                           {"set_num_threads", "at most 1024", "1073741824"}));
  EXPECT_TRUE(throws_error([] { set_num_threads(kMaxThreads + 1); }, {"at most"}));
  EXPECT_TRUE(throws_error([] { set_num_threads(0); }, {"set_num_threads", "at least 1"}));
  EXPECT_EQ(get_num_threads(), previous);
  set_num_threads(kMaxThreads);  // the bound itself is legal
  EXPECT_EQ(get_num_threads(), kMaxThreads);
  set_num_threads(previous);
}

// ---- 13. backward on two threads into one shared leaf -------------------------------------------
// (ThreadsTest: run under ThreadSanitizer too)

TEST(ThreadsTest, ConcurrentBackwardsIntoASharedLeaf) {
  const Tensor w = zeros({64}).requires_grad_();
  constexpr int kThreads = 4, kIterations = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&w] {
      for (int i = 0; i < kIterations; ++i) {
        const Tensor x = ones({64});
        sum(w * x + w).backward();  // dL/dw = 2 per element and call
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const std::vector<double> grad = w.grad().to_vector();
  for (double g : grad) EXPECT_EQ(g, 2.0 * kThreads * kIterations);
}

// ---- 14. errors name what the user called; empty sequences --------------------------------------

TEST(RobustnessTest, ErrorsNameTheFunctionCalled) {
  EXPECT_TRUE(throws_error([] { reshape(zeros({2, 3}), {4}); }, {"reshape:", "[2, 3]"}));
  EXPECT_TRUE(throws_error([] { reshape(transpose(zeros({2, 3}), 0, 1), {5}); }, {"reshape:"}));
  EXPECT_TRUE(throws_error([] { ones({-1}); }, {"ones:", "negative"}));
  EXPECT_TRUE(throws_error([] { scalar_tensor(NAN, kInt64); }, {"scalar_tensor:", "nan"}));
  EXPECT_TRUE(throws_error([] { zeros({2}, kInt64) + 1e300; }, {"add:", "int64"}));
  EXPECT_TRUE(throws_error(
      [] {
        masked_fill(zeros({2}, kInt64), bools({1, 0}, {2}), NAN);
      },
      {"masked_fill:"}));
  EXPECT_TRUE(throws_error([] { where(bools({1, 0}, {2}), zeros({2}, kInt64), NAN); }, {"where:"}));
  // Empty key and query sequences are accepted, as in PyTorch.
  EXPECT_EQ(nn::sequence_mask(lens({0, 0}), 0).shape(), (Shape{2, 0}));
  EXPECT_EQ(nn::causal_mask(0, 3).shape(), (Shape{0, 3}));
  EXPECT_EQ(nn::causal_mask(2, 0).shape(), (Shape{2, 0}));
  EXPECT_EQ(nn::masked_softmax(zeros({2, 0}), lens({0, 0})).shape(), (Shape{2, 0}));
  EXPECT_EQ(nn::attention_softmax(zeros({1, 2, 0}), {.valid_lens = lens({0}),
                                                     .is_causal = true,
                                                     .fully_masked_rows = nn::MaskedRows::Zero,
                                                     .mask_value = nn::kMaskedScore})
                .shape(),
            (Shape{1, 2, 0}));
  nn::keras::Attention keras_attention;
  EXPECT_EQ(keras_attention(zeros({1, 2, 3}), zeros({1, 0, 3}), Tensor(), Tensor(),
                            bools({}, {1, 0}), true)
                .shape(),
            (Shape{1, 2, 3}));
}

// ---- 15. .npy headers from Python 2 -------------------------------------------------------------

TEST(RobustnessTest, NpyHeadersFromPython2Load) {
  // What numpy.save wrote under Python 2: the shape's ints are longs, "3L".
  const std::vector<uint8_t> file = npy_file("(2L, 3L)", {1, 2, 3, 4, 5, 6});
  const Tensor t = parse_npy(file.data(), file.size());
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // Only one L, right after the digits.
  for (const std::string bad : {"(2LL, 3)", "(2 L, 3)", "(L, 3)"}) {
    const std::vector<uint8_t> f = npy_file(bad, {1, 2, 3, 4, 5, 6});
    EXPECT_TRUE(throws_error([&] { parse_npy(f.data(), f.size()); }, {"parse_npy", "header"}))
        << bad;
  }
}

}  // namespace
}  // namespace ag
