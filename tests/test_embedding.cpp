// nn::Embedding: torch.nn.Embedding's lookup, init and gradient (rows scattered
// back and added up where an index repeats), against
// tests/fixtures/seq2seq_embedding.npz (scripts/make_seq2seq_block_fixtures.py).
#include <cmath>

#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;
using testing::throws_error;

const Tensor& fix(const std::string& name) {
  return testing::fixture_tensor("seq2seq_embedding.npz", name);
}

TEST(EmbeddingTest, ShapesAndStateDictName) {
  nn::Embedding emb(10, 4);
  const auto named = emb.named_parameters();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].first, "weight");
  EXPECT_EQ(emb.weight.shape(), (Shape{10, 4}));
  EXPECT_EQ(emb(reshape(tensor({3}, {1}, kInt64), {})).shape(), (Shape{4}));  // 0-d index -> [dim]
  EXPECT_EQ(emb(ag::zeros({2, 3, 5}, kInt64)).shape(), (Shape{2, 3, 5, 4}));
  EXPECT_EQ(emb(ag::zeros({0}, kInt64)).shape(), (Shape{0, 4}));
}

TEST(EmbeddingTest, InitIsStandardNormalAndSeeded) {
  manual_seed(5);
  nn::Embedding a(200, 50);
  manual_seed(5);
  nn::Embedding b(200, 50);
  EXPECT_TRUE(all_close(a.weight, b.weight, 0, 0));
  const std::vector<double> v = a.weight.to_vector();
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  const double stddev = std::sqrt(sq / static_cast<double>(v.size()));
  // 10,000 draws: the mean's standard error is 0.01.
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(stddev, 1.0, 0.05);
}

TEST(EmbeddingTest, MatchesPyTorch) {
  for (const auto& [dtype, tol] : {std::pair{kFloat64, 1e-12}, {kFloat32, 1e-6}}) {
    SCOPED_TRACE(dtype_name(dtype));
    nn::Embedding emb(7, 3);
    emb.to(dtype);
    emb.load_state_dict({{"weight", fix("weight")}});
    Tensor out = emb(fix("indices"));
    EXPECT_TRUE(all_close(out, fix("output"), tol, tol));
    sum(out * fix("w").to(dtype)).backward();
    EXPECT_TRUE(all_close(emb.weight.grad(), fix("grad.weight"), tol, tol));
  }
}

TEST(EmbeddingTest, Gradcheck) {
  const Tensor indices = tensor({1, 4, 1, 0, 2, 4}, {3, 2}, kInt64);
  nn::Embedding emb(5, 3);
  emb.to(kFloat64);
  EXPECT_TRUE(testing::grad_ok(
      [&](const std::vector<Tensor>& in) {
        emb.weight = in[0];
        return emb(indices) * emb(indices);  // nonlinear, so repeated rows matter
      },
      {emb.weight.detach().clone().requires_grad_()}));
}

TEST(EmbeddingTest, BadIndices) {
  nn::Embedding emb(4, 2);
  EXPECT_TRUE(throws_error(
      [&] {
        emb(tensor({0, 4}, {2}, kInt64));
      },
      {"Embedding", "index 4", "num_embeddings = 4"}));
  EXPECT_TRUE(throws_error(
      [&] {
        emb(tensor({1, -1}, {1, 2}, kInt64));
      },
      {"Embedding", "index -1", "[1, 2]", "num_embeddings = 4"}));
  EXPECT_TRUE(throws_error([&] { emb(tensor({0, 1}, {2})); }, {"Embedding", "int64", "float32"}));
  EXPECT_TRUE(throws_error([&] { emb(Tensor()); }, {"Embedding", "undefined"}));
  EXPECT_TRUE(throws_error([] { nn::Embedding(0, 3); }, {"Embedding", "num_embeddings 0"}));
  EXPECT_TRUE(throws_error([] { nn::Embedding(3, -1); }, {"Embedding", "embedding_dim -1"}));
}

}  // namespace
}  // namespace ag
