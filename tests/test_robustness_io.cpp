// Hostile input to state dicts and .npy/.npz files (issue 29): missing,
// extra, mis-shaped, undefined or strided entries, odd names, truncated and
// foreign files, directories. A load either works completely or throws an
// ag::Error naming the function and the entry, and changes nothing.
#include <filesystem>
#include <fstream>

#include "attograd/viz.h"
#include "test_util.h"

namespace ag {
namespace {

using testing::ScratchDir;
using testing::throws_error;
namespace fs = std::filesystem;

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// ---- load_state_dict -------------------------------------------------------------

TEST(RobustnessIoTest, EveryBadEntryLeavesTheModuleUntouched) {
  manual_seed(29);
  nn::Linear layer(2, 2);
  const std::vector<double> weight = layer.weight.to_vector(), bias = layer.bias.to_vector();
  const Tensor w = ones({2, 2}), b = ones({2});
  // Each state is wrong in one entry; the good entry beside it must not be written either.
  const std::vector<std::pair<std::map<std::string, Tensor>, std::vector<std::string>>> cases = {
      {{{"weight", w}}, {"Linear.load_state_dict", "missing entry 'bias'", "[2]"}},
      {{{"weight", w}, {"bias", b}, {"extra", ones({3})}},
       {"Linear.load_state_dict", "unexpected entry 'extra'", "[3]"}},
      {{{"weight", w}, {"bias", b}, {"extra", Tensor()}},
       {"Linear.load_state_dict", "unexpected entry 'extra'", "none (undefined)"}},
      {{{"weight", w}, {"bias", Tensor()}},
       {"Linear.load_state_dict", "entry 'bias'", "none (undefined)", "[2]"}},
      {{{"weight", w}, {"bias", ones({1, 2})}}, {"entry 'bias' has shape [1, 2]", "shape [2]"}},
      {{{"weight", w}, {"bias", scalar_tensor(1.0)}}, {"entry 'bias' has shape []"}},
      {{{"weight", ones({4})}, {"bias", b}}, {"entry 'weight' has shape [4]", "[2, 2]"}},
      {{{"weight", w}, {"bias", zeros({2}, kBool)}}, {"entry 'bias' is a bool tensor"}},
      {{{"Weight", w}, {"bias", b}}, {"missing entry 'weight'"}},
      {{{"weight ", w}, {"bias", b}}, {"missing entry 'weight'"}},
  };
  for (const auto& [state_dict, fragments] : cases) {
    const auto& state = state_dict;  // a lambda captures a variable, not a binding (Clang 14)
    EXPECT_TRUE(throws_error([&] { layer.load_state_dict(state); }, fragments)) << fragments[0];
    EXPECT_EQ(layer.weight.to_vector(), weight);
    EXPECT_EQ(layer.bias.to_vector(), bias);
  }
  // Non-strict: missing entries are skipped and unexpected ones (even
  // undefined) ignored, as torch's strict=False; a mis-shaped one still throws.
  layer.load_state_dict({{"bias", b}, {"extra", Tensor()}}, false);
  EXPECT_EQ(layer.weight.to_vector(), weight);
  EXPECT_EQ(layer.bias.to_vector(), (std::vector<double>{1, 1}));
  EXPECT_TRUE(throws_error(
      [&] {
        layer.load_state_dict({{"weight", ones({3})}}, false);
      },
      {"entry 'weight' has shape [3]"}));
}

TEST(RobustnessIoTest, StridedAndConvertedEntriesLoadTheirLogicalValues) {
  nn::Linear layer(3, 2);  // weight [2, 3]
  // A transposed view, a broadcast (stride 0) view and int64 values.
  const Tensor source = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  layer.load_state_dict({{"weight", transpose(source, 0, 1)}, {"bias", expand(tensor({7}), {2})}});
  EXPECT_EQ(layer.weight.to_vector(), (std::vector<double>{1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(layer.bias.to_vector(), (std::vector<double>{7, 7}));
  Tensor ints = zeros({2}, kInt64);
  ints.data_ptr<int64_t>()[1] = 9;
  layer.load_state_dict({{"weight", zeros({2, 3}, kFloat64)}, {"bias", ints}});
  EXPECT_EQ(layer.bias.to_vector(), (std::vector<double>{0, 9}));
  EXPECT_EQ(layer.bias.dtype(), kFloat32);  // the parameter keeps its dtype
  // A source that requires grad loads its values; the parameter stays a leaf.
  layer.load_state_dict({{"weight", ones({2, 3}).requires_grad_()}, {"bias", ones({2})}});
  EXPECT_TRUE(layer.weight.is_leaf());
  EXPECT_EQ(layer.weight.to_vector(), std::vector<double>(6, 1.0));
}

// ---- save_npz / load_npz ---------------------------------------------------------

TEST(RobustnessIoTest, OddNamesRoundTrip) {
  ScratchDir dir("attograd_robustness_io_names");
  // Names numpy.savez also writes and numpy.load reads back unchanged.
  const std::map<std::string, Tensor> state = {
      {"", ones({1})},           {"a/b", ones({2})},
      {"x.npy", ones({3})},      {"\xc3\xa9t\xc3\xa9", ones({4})},
      {"with space", ones({5})}, {"..", ones({6})},
  };
  save_npz(dir / "names.npz", state);
  const auto loaded = load_npz(dir / "names.npz");
  ASSERT_EQ(loaded.size(), state.size());
  for (const auto& [name, t] : state) {
    ASSERT_EQ(loaded.count(name), 1u) << name;
    EXPECT_EQ(loaded.at(name).numel(), t.numel()) << name;
  }
  // A NUL in a name: Python's zipfile would cut the name there. Nothing is written.
  EXPECT_TRUE(throws_error(
      [&] {
        save_npz(dir / "nul.npz", {{std::string("a\0b", 3), ones({1})}});
      },
      {"save_npz", "'a\\0...'", "NUL"}));
  EXPECT_FALSE(fs::exists(dir / "nul.npz"));
  // An undefined entry, even after good ones: nothing is written either.
  EXPECT_TRUE(throws_error(
      [&] {
        save_npz(dir / "undef.npz", {{"a", ones({1})}, {"b", Tensor()}});
      },
      {"save_npz", "'b'", "undefined"}));
  EXPECT_FALSE(fs::exists(dir / "undef.npz"));
  EXPECT_TRUE(throws_error(
      [&] {
        save_npz(dir / "long.npz", {{std::string(70000, 'x'), ones({1})}});
      },
      {"save_npz", "longer than 65535"}));
}

TEST(RobustnessIoTest, StridedZeroDimAndEmptyTensorsRoundTrip) {
  ScratchDir dir("attograd_robustness_io_shapes");
  const Tensor t = transpose(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1);
  const Tensor b = expand(tensor({8}, {1}, kFloat64), {3});
  save_npz(dir / "s.npz",
           {{"t", t}, {"b", b}, {"scalar", scalar_tensor(3.5)}, {"empty", zeros({0, 4}, kInt64)}});
  const auto loaded = load_npz(dir / "s.npz");
  EXPECT_EQ(loaded.at("t").shape(), (Shape{3, 2}));
  EXPECT_EQ(loaded.at("t").to_vector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(loaded.at("b").to_vector(), (std::vector<double>{8, 8, 8}));
  EXPECT_EQ(loaded.at("scalar").dim(), 0);
  EXPECT_EQ(loaded.at("scalar").item(), 3.5);
  EXPECT_EQ(loaded.at("empty").shape(), (Shape{0, 4}));
  EXPECT_EQ(loaded.at("empty").dtype(), kInt64);
}

TEST(RobustnessIoTest, TruncatedFilesThrowAtEveryLength) {
  ScratchDir dir("attograd_robustness_io_truncated");
  save_npz(dir / "full.npz", {{"w", ones({3, 5})}, {"b", zeros({5}, kFloat64)}});
  save_npy(dir / "full.npy", ones({3, 5}));
  for (const std::string name : {"full.npz", "full.npy"}) {
    const std::vector<char> bytes = read_bytes(dir / name);
    const bool npz = name.ends_with(".npz");
    // Every cut, parsed in memory (what load_* runs on the file's bytes)...
    int refused = 0;
    for (size_t n = 0; n < bytes.size(); ++n) {
      const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
      const auto parse = [&] { npz ? (void)parse_npz(data, n) : (void)parse_npy(data, n); };
      refused += throws_error(parse, {npz ? "parse_npz" : "parse_npy"}) ? 1 : 0;
    }
    EXPECT_EQ(refused, static_cast<int>(bytes.size())) << name;
    // ...and a few as files.
    for (const size_t n : {size_t{0}, size_t{9}, bytes.size() / 2, bytes.size() - 1}) {
      write_bytes(dir / "cut", std::vector<char>(bytes.begin(), bytes.begin() + n));
      const auto load = [&] { npz ? (void)load_npz(dir / "cut") : (void)load_npy(dir / "cut"); };
      EXPECT_TRUE(throws_error(load, {npz ? "load_npz" : "load_npy", "cut"})) << name << " " << n;
    }
  }
}

TEST(RobustnessIoTest, ForeignFilesAndDirectoriesAreRefused) {
  ScratchDir dir("attograd_robustness_io_foreign");
  std::ofstream(dir / "text.npz") << "name,value\nw,1.0\n";
  save_npy(dir / "one.npy", ones({2}));
  save_npz(dir / "one.npz", {{"w", ones({2})}});
  viz::show_heatmaps(ones({2, 2}), dir / "map.png");
  std::ofstream(dir / "empty.npz").flush();
  EXPECT_TRUE(throws_error([&] { load_npz(dir / "text.npz"); }, {"load_npz", "text.npz"}));
  EXPECT_TRUE(throws_error([&] { load_npz(dir / "one.npy"); }, {"load_npz", "not a zip"}));
  EXPECT_TRUE(throws_error([&] { load_npy(dir / "one.npz"); }, {"load_npy", "bad magic"}));
  EXPECT_TRUE(throws_error([&] { load_npz(dir / "map.png"); }, {"load_npz", "map.png"}));
  EXPECT_TRUE(throws_error([&] { load_npy(dir / "map.png"); }, {"load_npy", "bad magic"}));
  EXPECT_TRUE(throws_error([&] { load_npz(dir / "empty.npz"); }, {"load_npz", "0 bytes"}));
  EXPECT_TRUE(throws_error([&] { load_npz(dir / "missing.npz"); }, {"load_npz", "cannot open"}));
  // Directories, for reading and for writing; and a file where a directory should be.
  EXPECT_TRUE(throws_error([&] { load_npz(dir.str()); }, {"load_npz", "cannot open"}));
  EXPECT_TRUE(throws_error([&] { load_npy(dir.str()); }, {"load_npy", "cannot open"}));
  EXPECT_TRUE(throws_error(
      [&] {
        save_npz(dir.str(), {{"w", ones({1})}});
      },
      {"save_npz", "cannot open", "for writing"}));
  EXPECT_TRUE(throws_error([&] { save_npy(dir.str(), ones({1})); }, {"save_npy", "cannot open"}));
  EXPECT_TRUE(throws_error(
      [&] {
        save_npz(dir / "one.npy/inner.npz", {{"w", ones({1})}});
      },
      {"save_npz", "cannot open"}));
  // A state dict from the wrong model: names and shapes, all or nothing.
  nn::Linear layer(2, 2);
  const std::vector<double> weight = layer.weight.to_vector();
  EXPECT_TRUE(throws_error([&] { layer.load_state_dict(load_npz(dir / "one.npz")); },
                           {"Linear.load_state_dict", "missing entry"}));
  EXPECT_EQ(layer.weight.to_vector(), weight);
}

}  // namespace
}  // namespace ag
