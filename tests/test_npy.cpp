// .npy/.npz loading and saving, against files numpy wrote (tests/npy_corpus,
// made by scripts/make_npy_corpus.py) and against broken files that must
// raise ag::Error instead of crashing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attograd/npy.h"
#include "attograd/ops.h"

#include "../core/src/tensor_impl_access.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace {

const std::string kCorpus = ag::testing::source_path("tests/npy_corpus");

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.is_open()) << path;
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> corpus_files(const std::string& prefix, const std::string& extension) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(extension)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A fresh path under the test temp dir; unique so parallel runs do not collide.
std::string temp_path(const std::string& suffix) {
  static std::mt19937_64 generator{std::random_device{}()};
  return ::testing::TempDir() + "attograd_npy_" + std::to_string(generator()) + suffix;
}

// Runs fn, which must throw ag::Error whose message starts with `prefix`.
template <typename Fn>
::testing::AssertionResult throws_with_prefix(Fn&& fn, const std::string& prefix) {
  try {
    fn();
  } catch (const ag::Error& e) {
    if (std::string(e.what()).starts_with(prefix)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "message \"" << e.what() << "\" does not start with \"" << prefix << "\"";
  }
  return ::testing::AssertionFailure() << "no ag::Error thrown";
}

template <typename Fn>
::testing::AssertionResult throws_containing(Fn&& fn, const std::string& fragment) {
  try {
    fn();
  } catch (const ag::Error& e) {
    if (std::string(e.what()).find(fragment) != std::string::npos)
      return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "message \"" << e.what() << "\" lacks \"" << fragment << "\"";
  }
  return ::testing::AssertionFailure() << "no ag::Error thrown";
}

// Same dtype, shape and bytes (so NaNs and -0.0 count as equal to themselves).
void expect_identical(const ag::Tensor& actual, const ag::Tensor& expected) {
  ASSERT_EQ(actual.dtype(), expected.dtype());
  ASSERT_EQ(actual.shape(), expected.shape());
  const ag::Tensor a = actual.contiguous(), b = expected.contiguous();
  const size_t n = static_cast<size_t>(a.numel());
  switch (a.dtype()) {
    case ag::DType::Float32:
      EXPECT_EQ(std::memcmp(a.data_ptr<float>(), b.data_ptr<float>(), n * 4), 0);
      break;
    case ag::DType::Float64:
      EXPECT_EQ(std::memcmp(a.data_ptr<double>(), b.data_ptr<double>(), n * 8), 0);
      break;
    case ag::DType::Int64:
      EXPECT_EQ(std::memcmp(a.data_ptr<int64_t>(), b.data_ptr<int64_t>(), n * 8), 0);
      break;
    case ag::DType::Bool:
      EXPECT_EQ(std::memcmp(a.data_ptr<bool>(), b.data_ptr<bool>(), n), 0);
      break;
  }
}

// One line of expected.txt: <file> <key|-> <dtype> <ndim> <dims...> <values...>
struct Expected {
  std::string file, key, dtype;
  ag::Shape shape;
  std::vector<std::string> values;
};

std::vector<Expected> read_expected() {
  std::ifstream in(kCorpus + "/expected.txt");
  EXPECT_TRUE(in.is_open());
  std::vector<Expected> lines;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    Expected e;
    size_t ndim = 0;
    words >> e.file >> e.key >> e.dtype >> ndim;
    e.shape.resize(ndim);
    for (int64_t& d : e.shape) words >> d;
    for (std::string v; words >> v;) e.values.push_back(v);
    lines.push_back(std::move(e));
  }
  return lines;
}

// Exact comparison with the values numpy wrote: floats bit for bit (NaN as
// NaN), integers as int64, bools as bytes 0/1.
void expect_values(const ag::Tensor& t, const Expected& e) {
  SCOPED_TRACE(e.file + " [" + e.key + "]");
  ASSERT_EQ(ag::dtype_name(t.dtype()), e.dtype);
  ASSERT_EQ(t.shape(), e.shape);
  ASSERT_EQ(static_cast<size_t>(t.numel()), e.values.size());
  for (size_t i = 0; i < e.values.size(); ++i) {
    const std::string& v = e.values[i];
    switch (t.dtype()) {
      case ag::DType::Float32:
      case ag::DType::Float64: {
        const double want = std::strtod(v.c_str(), nullptr);
        const double got =
            t.dtype() == ag::kFloat32 ? t.data_ptr<float>()[i] : t.data_ptr<double>()[i];
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(got)) << "element " << i;
        } else {
          EXPECT_EQ(got, want) << "element " << i;
          EXPECT_EQ(std::signbit(got), std::signbit(want)) << "element " << i;
        }
        break;
      }
      case ag::DType::Int64:
        EXPECT_EQ(t.data_ptr<int64_t>()[i], std::stoll(v)) << "element " << i;
        break;
      case ag::DType::Bool: {
        uint8_t byte;  // inspect the stored byte itself: it must be exactly 0 or 1
        std::memcpy(&byte, t.data_ptr<bool>() + i, 1);
        EXPECT_EQ(byte, std::stoi(v)) << "element " << i;
        break;
      }
    }
  }
}

// Every prefix of `bytes` (in a buffer of exactly that size, so that a
// sanitizer sees any read past it) must throw.
template <typename Parse>
void expect_every_prefix_throws(const std::vector<uint8_t>& bytes, Parse parse) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> prefix(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(parse(prefix.data(), prefix.size()), ag::Error) << "prefix of " << n << " bytes";
  }
}

// Flipping any one byte may give another valid file, but never a crash.
template <typename Parse>
void expect_every_byte_flip_handled(const std::vector<uint8_t>& bytes, Parse parse) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::vector<uint8_t> copy = bytes;
    copy[i] ^= 0xFF;
    try {
      parse(copy.data(), copy.size());
    } catch (const ag::Error&) {
    }
  }
}

}  // namespace

// ---- files numpy wrote ---------------------------------------------------------------------

TEST(NpyTest, EveryValidFileLoadsWithTheValuesNumpyWrote) {
  const std::vector<Expected> expected = read_expected();
  const std::vector<std::string> files = corpus_files("valid_", "");
  ASSERT_GE(files.size(), 15u);
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::vector<const Expected*> arrays;
    for (const Expected& e : expected)
      if (e.file == file) arrays.push_back(&e);
    if (file.ends_with(".npy")) {
      ASSERT_EQ(arrays.size(), 1u);
      expect_values(ag::load_npy(kCorpus + "/" + file), *arrays[0]);
    } else {
      const std::map<std::string, ag::Tensor> loaded = ag::load_npz(kCorpus + "/" + file);
      ASSERT_EQ(loaded.size(), arrays.size());
      for (const Expected* e : arrays) {
        ASSERT_TRUE(loaded.count(e->key)) << "missing key " << e->key;
        expect_values(loaded.at(e->key), *e);
      }
    }
  }
}

TEST(NpyTest, EveryBadFileThrowsNamingTheOp) {
  const std::vector<std::string> npy = corpus_files("bad_", ".npy");
  const std::vector<std::string> npz = corpus_files("bad_", ".npz");
  ASSERT_GE(npy.size(), 30u);
  ASSERT_GE(npz.size(), 30u);
  for (const std::string& file : npy) {
    const std::string path = kCorpus + "/" + file;
    const std::vector<uint8_t> bytes = read_bytes(path);
    EXPECT_TRUE(throws_with_prefix([&] { ag::load_npy(path); }, "load_npy: '" + path + "': "))
        << file;
    EXPECT_TRUE(
        throws_with_prefix([&] { ag::parse_npy(bytes.data(), bytes.size()); }, "parse_npy: "))
        << file;
  }
  for (const std::string& file : npz) {
    const std::string path = kCorpus + "/" + file;
    const std::vector<uint8_t> bytes = read_bytes(path);
    EXPECT_TRUE(throws_with_prefix([&] { ag::load_npz(path); }, "load_npz: '" + path + "': "))
        << file;
    EXPECT_TRUE(
        throws_with_prefix([&] { ag::parse_npz(bytes.data(), bytes.size()); }, "parse_npz: "))
        << file;
  }
}

TEST(NpyTest, ErrorMessagesSayWhatIsWrong) {
  const std::map<std::string, std::string> cases = {
      {"bad_magic.npy", "bad magic"},
      {"bad_truncated_magic.npy", "file too short (4 bytes)"},
      {"bad_version_4.npy", "version 4.0"},
      {"bad_fortran.npy", "Fortran-order"},
      {"bad_big_endian.npy", "big-endian dtype '>f4'"},
      {"bad_object.npy", "object arrays"},
      {"bad_u2.npy", "unsupported dtype '<u2'"},
      {"bad_structured.npy", "structured dtypes"},
      {"bad_header_missing_key.npy", "missing key 'fortran_order'"},
      {"bad_header_duplicate_key.npy", "'descr' appears twice"},
      {"bad_header_extra_key.npy", "unexpected key 'x'"},
      {"bad_header_shape_not_tuple.npy", "(n,)"},
      {"bad_header_length_huge.npy", "header length 65535 runs past the end"},
      {"bad_shape_mismatch.npy", "data is 8 bytes but shape [3] of '<f4' needs 12"},
      {"bad_shape_overflow.npy", "too many elements"},
      {"bad_truncated_data.npy", "data is 7 bytes"},
      {"bad_zip_crc.npz", "CRC-32 mismatch"},
      {"bad_zip_duplicate.npz", "entry 'a.npy' appears twice"},
      {"bad_zip_not_npy.npz", "entry 'a.txt' is not a .npy file"},
      {"bad_zip_compressed_size_huge.npz", "past the start of the central directory"},
      {"bad_zip_uncompressed_size_huge.npz", "more than deflate can produce"},
      {"bad_zip_uncompressed_size_larger.npz", "not the declared"},
      {"bad_zip_uncompressed_size_smaller.npz", "more than the declared"},
      {"bad_zip_deflate_trailing.npz", "left over after the deflate stream"},
      {"bad_zip_deflate_truncated.npz", "truncated"},
      {"bad_zip_overlap.npz", "overlap"},
      {"bad_zip_encrypted.npz", "encrypted"},
      {"bad_zip_method.npz", "compression method 12"},
      {"bad_zip_multidisk.npz", "multi-disk"},
      {"bad_zip_empty.npz", "too short to be a zip archive"},
      {"bad_zip_not_zip.npz", "no zip end-of-central-directory record"},
      {"bad_zip_entry_bad_dtype.npz", "entry 'a.npy': unsupported dtype '<u2'"},
  };
  for (const auto& [file, fragment] : cases) {
    const std::string path = kCorpus + "/" + file;
    if (file.ends_with(".npy"))
      EXPECT_TRUE(throws_containing([&] { ag::load_npy(path); }, fragment)) << file;
    else
      EXPECT_TRUE(throws_containing([&] { ag::load_npz(path); }, fragment)) << file;
  }
}

TEST(NpyTest, OpenAndSaveErrorsNameTheOp) {
  const std::string missing = temp_path("/missing.npy");
  EXPECT_TRUE(throws_with_prefix([&] { ag::load_npy(missing); },
                                 "load_npy: cannot open '" + missing + "'"));
  EXPECT_TRUE(throws_with_prefix([&] { ag::load_npz(missing); },
                                 "load_npz: cannot open '" + missing + "'"));
  EXPECT_TRUE(throws_with_prefix([&] { ag::load_npy(kCorpus); }, "load_npy: cannot open"));
  EXPECT_TRUE(throws_with_prefix([&] { ag::save_npy(missing, ag::zeros({2})); },
                                 "save_npy: cannot open '" + missing + "' for writing"));
  EXPECT_TRUE(throws_with_prefix(
      [&] {
        ag::save_npz(missing, {{"a", ag::zeros({2})}});
      },
      "save_npz: cannot open"));
  EXPECT_TRUE(throws_with_prefix([] { ag::serialize_npy(ag::Tensor()); }, "serialize_npy: "));
  EXPECT_TRUE(throws_with_prefix([] { ag::serialize_npy(ag::zeros(ag::Shape(65, 1))); },
                                 "serialize_npy: NumPy arrays have at most 64 dimensions"));
  EXPECT_TRUE(throws_with_prefix(
      [] {
        ag::save_npz("unused.npz", {{"w", ag::Tensor()}});
      },
      "save_npz: tensor 'w' is undefined"));
}

// ---- our bytes are numpy's bytes -----------------------------------------------------------

TEST(NpyTest, SavedBytesMatchNumpySaveExactly) {
  // numpy.save(f, (np.arange(6) * 0.5 - 1.25).astype('<f4').reshape(2, 3))
  const ag::Tensor t = ag::tensor({-1.25, -0.75, -0.25, 0.25, 0.75, 1.25}, {2, 3});
  EXPECT_EQ(ag::serialize_npy(t), read_bytes(kCorpus + "/valid_ref_f4.npy"));
  // Every other plain numpy.save file: load, write back, same bytes.
  for (const std::string& file : corpus_files("valid_ref_", ".npy")) {
    const std::vector<uint8_t> bytes = read_bytes(kCorpus + "/" + file);
    EXPECT_EQ(ag::serialize_npy(ag::parse_npy(bytes.data(), bytes.size())), bytes) << file;
  }
}

// ---- round trips -----------------------------------------------------------------------------

TEST(NpyTest, RoundTripsEveryDtypeThroughAFile) {
  const std::vector<ag::Tensor> tensors = {
      ag::tensor({1.5, -2.25, 3e38, -0.0}, {2, 2}, ag::kFloat32),
      ag::tensor({0.1, -1e-300, 1e300}, {3}, ag::kFloat64),
      ag::tensor({-5, 0, 7, 1e15, -3, 2}, {1, 2, 3}, ag::kInt64),
      ag::tensor({1, 0, 0, 1, 1}, {5}, ag::kBool),
      ag::scalar_tensor(4.25, ag::kFloat64),
      ag::scalar_tensor(1, ag::kBool),
      ag::zeros({0}, ag::kFloat32),
      ag::zeros({3, 0, 2}, ag::kInt64),
  };
  const std::string path = temp_path(".npy");
  for (const ag::Tensor& t : tensors) {
    SCOPED_TRACE(ag::shape_str(t.shape()) + " " + ag::dtype_name(t.dtype()));
    ag::save_npy(path, t);
    expect_identical(ag::load_npy(path), t);
    const std::vector<uint8_t> bytes = ag::serialize_npy(t);
    EXPECT_EQ(bytes.size() % 64, static_cast<size_t>(t.numel()) * ag::dtype_size(t.dtype()) % 64);
    expect_identical(ag::parse_npy(bytes.data(), bytes.size()), t);
  }
  fs::remove(path);
}

TEST(NpyTest, SavesNonContiguousViewsInLogicalOrder) {
  // [[0, 1, 2], [3, 4, 5]] transposed: [[0, 3], [1, 4], [2, 5]]
  const ag::Tensor transposed = ag::transpose(ag::tensor({0, 1, 2, 3, 4, 5}, {2, 3}), 0, 1);
  ASSERT_FALSE(transposed.is_contiguous());
  const std::vector<uint8_t> bytes = ag::serialize_npy(transposed);
  const ag::Tensor loaded = ag::parse_npy(bytes.data(), bytes.size());
  EXPECT_EQ(loaded.shape(), (ag::Shape{3, 2}));
  EXPECT_EQ(loaded.to_vector(), (std::vector<double>{0, 3, 1, 4, 2, 5}));

  // A strided view with an offset: elements 1, 3, 5. No public op makes one
  // (TensorImpl is read-only outside the library), so the library's own door builds it.
  const ag::Tensor base = ag::arange(6);
  const ag::Tensor view =
      ag::detail::TensorImplAccess::make(base.impl()->storage(), 1, {3}, {2}, base.dtype());
  const std::vector<uint8_t> strided = ag::serialize_npy(view);
  EXPECT_EQ(ag::parse_npy(strided.data(), strided.size()).to_vector(),
            (std::vector<double>{1, 3, 5}));
}

TEST(NpyTest, NpzRoundTrip) {
  const std::map<std::string, ag::Tensor> tensors = {
      {"W_q.weight", ag::tensor({1, 2, 3, 4, 5, 6}, {2, 3})},
      {"lengths", ag::tensor({3, 1}, {2}, ag::kInt64)},
      {"mask", ag::tensor({1, 0, 1}, {3}, ag::kBool)},
      {"scale", ag::scalar_tensor(0.125, ag::kFloat64)},
      {"empty", ag::zeros({0, 4})},
      {"transposed", ag::transpose(ag::tensor({1, 2, 3, 4, 5, 6}, {3, 2}), 0, 1)},
      {"\xce\xb1", ag::ones({1})},  // UTF-8 "alpha"
  };
  const std::string path = temp_path(".npz");
  ag::save_npz(path, tensors);
  const std::map<std::string, ag::Tensor> loaded = ag::load_npz(path);
  ASSERT_EQ(loaded.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(loaded.count(name));
    expect_identical(loaded.at(name), t);
  }
  fs::remove(path);

  ag::save_npz(path, {});
  EXPECT_TRUE(ag::load_npz(path).empty());
  fs::remove(path);
}

// ---- robustness: truncated and corrupted bytes ------------------------------------------------

TEST(NpyTest, EveryTruncatedNpyThrows) {
  for (const char* file : {"valid_ref_f4.npy", "valid_ref_0d.npy", "valid_v2.npy"}) {
    SCOPED_TRACE(file);
    const std::vector<uint8_t> bytes = read_bytes(kCorpus + "/" + file);
    expect_every_prefix_throws(bytes, ag::parse_npy);
    expect_every_byte_flip_handled(bytes, ag::parse_npy);
  }
}

TEST(NpyTest, EveryTruncatedNpzThrows) {
  const std::string ours = temp_path(".npz");
  ag::save_npz(ours, {{"a", ag::arange(3)}, {"b", ag::ones({2, 2}, ag::kBool)}});
  for (const std::string& path :
       {kCorpus + "/valid_savez.npz", kCorpus + "/valid_savez_compressed.npz",
        kCorpus + "/valid_zip64.npz", ours}) {
    SCOPED_TRACE(path);
    const std::vector<uint8_t> bytes = read_bytes(path);
    expect_every_prefix_throws(bytes, ag::parse_npz);
    expect_every_byte_flip_handled(bytes, ag::parse_npz);
  }
  fs::remove(ours);
}
