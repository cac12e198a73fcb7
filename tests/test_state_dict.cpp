// State dicts across the PyTorch border. d2l's AdditiveAttention and
// MultiHeadAttention state_dict()s, saved from PyTorch with numpy.savez
// (tests/fixtures/state_dict_d2l_*.npz, scripts/make_keras_optim_fixtures.py),
// load into nn::AdditiveAttention / nn::MultiHeadAttention and give PyTorch's
// outputs; ours saved with save_npz have PyTorch's names, shapes and dtypes.
// The other direction (our file into the torch module) is checked by
// scripts/check_state_dict_roundtrip.py on the files the last test writes.
#include "test_util.h"

namespace ag {
namespace {

using testing::all_close;

const Tensor& io(const std::string& name) {
  return testing::fixture_tensor("state_dict_d2l_io.npz", name);
}

std::map<std::string, Tensor> torch_state(const std::string& name) {
  return load_npz(testing::source_path("tests/fixtures/state_dict_d2l_" + name + ".npz"));
}

// Same names, shapes and dtypes, entry by entry.
void expect_same_layout(const std::map<std::string, Tensor>& ours,
                        const std::map<std::string, Tensor>& torch) {
  ASSERT_EQ(ours.size(), torch.size());
  for (auto a = ours.begin(), b = torch.begin(); a != ours.end(); ++a, ++b) {
    EXPECT_EQ(a->first, b->first);
    EXPECT_EQ(a->second.shape(), b->second.shape()) << a->first;
    EXPECT_EQ(a->second.dtype(), b->second.dtype()) << a->first;
  }
}

TEST(StateDictTest, LoadsD2lAdditiveAttentionFromPyTorch) {
  // d2l's toy example: queries [2, 1, 20], keys [2, 10, 2], values [2, 10, 4].
  nn::AdditiveAttention attention(2, 20, 8, 0.1);
  expect_same_layout(attention.state_dict(), torch_state("additive"));
  attention.load_state_dict(torch_state("additive"));
  attention.eval();
  Tensor out = attention(io("additive_queries"), io("additive_keys"), io("additive_values"),
                         io("additive_valid_lens"));
  EXPECT_TRUE(all_close(out, io("additive_out"), 1e-5, 1e-5));
  EXPECT_TRUE(all_close(attention.attention_weights(), io("additive_weights"), 1e-6, 1e-5));
}

TEST(StateDictTest, LoadsD2lMultiHeadAttentionFromPyTorch) {
  // X [2, 4, 16], Y [2, 6, 16], 4 heads; with and without biases.
  for (const auto& [name, bias] : {std::pair{"mha", false}, {"mha_bias", true}}) {
    SCOPED_TRACE(name);
    nn::MultiHeadAttention mha(16, 16, 16, 16, 4, 0.5, bias);
    expect_same_layout(mha.state_dict(), torch_state(name));
    mha.load_state_dict(torch_state(name));
    mha.eval();
    Tensor out = mha(io("mha_X"), io("mha_Y"), io("mha_Y"), io("mha_valid_lens"));
    EXPECT_TRUE(all_close(out, io(std::string(name) + "_out"), 1e-5, 1e-5));
    EXPECT_TRUE(all_close(mha.attention_weights(), io(std::string(name) + "_weights"), 1e-6, 1e-5));
  }
}

TEST(StateDictTest, SavedStateDictsHavePyTorchsLayoutAndRoundTrip) {
  // Fresh (non-PyTorch) weights, saved for scripts/check_state_dict_roundtrip.py
  // together with the inputs and our outputs:
  //   <tmp>/attograd_state_dict_<name>.npz     the state dict
  //   <tmp>/attograd_state_dict_<name>_io.npz  queries, keys, values, valid_lens, out
  manual_seed(21);
  nn::AdditiveAttention additive(2, 20, 8);
  nn::MultiHeadAttention mha(16, 16, 16, 16, 4, 0.0, /*bias=*/true);
  struct Saved {
    const char* name;
    nn::Module& module;
    std::map<std::string, Tensor> inputs;
    Tensor out;
  };
  Saved saved[] = {
      {"additive",
       additive,
       {{"queries", io("additive_queries")},
        {"keys", io("additive_keys")},
        {"values", io("additive_values")},
        {"valid_lens", io("additive_valid_lens")}},
       additive(io("additive_queries"), io("additive_keys"), io("additive_values"),
                io("additive_valid_lens"))},
      {"mha_bias",
       mha,
       {{"queries", io("mha_X")},
        {"keys", io("mha_Y")},
        {"values", io("mha_Y")},
        {"valid_lens", io("mha_valid_lens")}},
       mha(io("mha_X"), io("mha_Y"), io("mha_Y"), io("mha_valid_lens"))},
  };
  for (Saved& s : saved) {
    SCOPED_TRACE(s.name);
    const std::string path = ::testing::TempDir() + "attograd_state_dict_" + s.name;
    save_npz(path + ".npz", s.module.state_dict());
    std::map<std::string, Tensor> io_file = s.inputs;
    io_file["out"] = s.out.detach();
    save_npz(path + "_io.npz", io_file);

    const auto reloaded = load_npz(path + ".npz");
    expect_same_layout(reloaded, torch_state(s.name));
    for (const auto& [name, p] : s.module.named_parameters())
      EXPECT_TRUE(all_close(reloaded.at(name), p, 0, 0)) << name;
  }
}

}  // namespace
}  // namespace ag
