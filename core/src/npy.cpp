// NumPy's .npy and .npz files.
//
// The .npy format (documented in numpy/lib/format.py) is a small header
// followed by the raw array bytes:
//
//   offset   size   content
//   0        6      magic string "\x93NUMPY"
//   6        1      major version: 1, 2 or 3
//   7        1      minor version: 0
//   8        2|4    header length H, little-endian: uint16 in 1.0, uint32 in 2.0
//                   and 3.0 (3.0 only allows UTF-8 in the header)
//   10|12    H      header: a Python dict literal, padded with spaces and ended
//                   by '\n' so the data starts at a multiple of 64 bytes, e.g.
//                   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
//   10|12+H  ...    data: prod(shape) items, C order (last index fastest)
//
// 'descr' is byte order + kind + item size: '<' little-endian, '>' big-endian,
// '|' for one-byte types; 'f' float, 'i' signed int, 'u' unsigned, 'b' bool,
// 'O' pickled Python objects. 'shape' is a tuple: () for a 0-d array, (3,)
// with its comma for one dimension. With fortran_order True the data is in
// column-major order instead.
//
// An .npz file is a zip archive (see zip.cpp) with one "<name>.npy" member per
// array: stored by numpy.savez, deflated by numpy.savez_compressed.
//
// Everything read from a file is untrusted: the header is parsed by a strict
// little parser (not evaluated), every length is checked against the bytes
// actually there, and the shape's element count against the data size, before
// anything is allocated.
#include "attograd/npy.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string_view>

#include "zip.h"

namespace ag {

// Tensor storage and file data are both little-endian, so data is copied as is.
static_assert(std::endian::native == std::endian::little,
              "npy.cpp copies little-endian file data directly into tensors");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kAlign = 64;  // numpy pads headers so the data is 64-byte aligned
// NumPy 2 arrays have at most 64 dimensions; more is a corrupt file.
constexpr size_t kMaxDims = 64;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(where + ": " + what);
}

// The file dtypes we read, and how each maps to a tensor dtype. The first
// entry for each tensor dtype is the one we write.
struct FileType {
  std::string_view descr;
  DType dtype;
  size_t item_size;  // in the file
};
constexpr FileType kFileTypes[] = {
    {"<f4", kFloat32, 4}, {"<f8", kFloat64, 8}, {"<i8", kInt64, 8},
    {"|b1", kBool, 1},    {"<i4", kInt64, 4},  // int32, widened to int64
};

const FileType& file_type(std::string_view descr, const std::string& where) {
  for (const FileType& type : kFileTypes)
    if (type.descr == descr) return type;
  std::string quoted = "'";
  quoted.append(descr).push_back(
      '\'');  // (operator+ chains trip a GCC 12 -Wrestrict false positive)
  if (!descr.empty() && descr[0] == '>')
    fail(where, "big-endian dtype " + quoted + " is not supported (save it little-endian)");
  if (descr.find('O') != std::string_view::npos)
    fail(where, "object arrays (dtype " + quoted + ") are not supported");
  fail(where,
       "unsupported dtype " + quoted + " (supported: <f4, <f8, <i8, |b1, and <i4 read as int64)");
}

const FileType& file_type(DType dtype) {
  for (const FileType& type : kFileTypes)
    if (type.dtype == dtype) return type;
  throw Error(std::string("npy: no .npy dtype for ") + dtype_name(dtype));
}

// ---- the header dict ---------------------------------------------------------------
// Grammar accepted (a strict subset of Python literals, as numpy writes them):
//   header := spaces dict spaces '\n'
//   dict   := '{' [ key ':' value { ',' key ':' value } [','] ] '}'
//   key    := 'descr' | 'fortran_order' | 'shape', each exactly once
//   value  := string | 'True' | 'False' | tuple
//   tuple  := '(' ')' | '(' int ',' ')' | '(' int { ',' int } [','] ')'
// with spaces allowed between tokens, strings in '...' or "..." without
// escapes, and ints as non-negative decimals, optionally with Python 2's
// long suffix L (a header written by Python 2 reads (2L, 3L)).
// The shape then goes through shape_numel, attograd's one shape check.

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  Header parse() {
    Header header;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!consume('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr" && !has_descr) {
        skip_spaces();
        if (pos_ < text_.size() && text_[pos_] == '[')
          fail("structured dtypes (a list 'descr') are not supported");
        header.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        header.fortran_order = bool_literal();
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        header.shape = tuple_literal();
        has_shape = true;
      } else if (key == "descr" || key == "fortran_order" || key == "shape") {
        fail("key '" + key + "' appears twice");
      } else {
        fail("unexpected key '" + key + "'");
      }
      if (consume(',')) continue;
      if (!consume('}')) fail("expected ',' or '}' after the value of '" + key + "'");
      break;
    }
    skip_spaces();
    if (pos_ + 1 != text_.size() || text_[pos_] != '\n')
      fail("expected only spaces and a final newline after the dict");
    for (const auto& [seen, key] :
         {std::pair{has_descr, "descr"}, std::pair{has_order, "fortran_order"},
          std::pair{has_shape, "shape"}})
      if (!seen) fail(std::string("missing key '") + key + "'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    ag::fail(where_, "header dict: " + what + " (at header byte " + std::to_string(pos_) + ")");
  }

  void skip_spaces() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }

  bool consume(char c) {
    skip_spaces();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) fail(std::string("expected '") + c + "'");
  }

  std::string string_literal() {
    skip_spaces();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    const char quote = text_[pos_++];
    const size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '\\' || c < 0x20 || c >= 0x7f) fail("unsupported character in string");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    return std::string(text_.substr(begin, pos_++ - begin));
  }

  bool bool_literal() {
    skip_spaces();
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("expected True or False");
  }

  int64_t int_literal() {
    skip_spaces();
    const size_t begin = pos_;
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      const int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        fail("dimension does not fit in 64 bits");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == begin) fail("expected a non-negative integer");
    if (text_[begin] == '0' && pos_ - begin > 1) fail("integer with a leading zero");
    // Python 2's long literal, "3L": NumPy writes it from Python 2 and still reads it.
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
    return value;
  }

  Shape tuple_literal() {
    expect('(');
    Shape dims;
    while (!consume(')')) {
      if (dims.size() == kMaxDims) fail("more than " + std::to_string(kMaxDims) + " dimensions");
      dims.push_back(int_literal());
      if (consume(',')) continue;
      if (!consume(')')) fail("expected ',' or ')' in the shape");
      // In Python (3) is just 3: a one-element tuple is written (3,).
      if (dims.size() == 1) fail("shape (n) is not a tuple; a 1-D shape is written (n,)");
      break;
    }
    return dims;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const std::string& where_;
};

// "()", "(3,)", "(2, 3)": Python's repr of the shape tuple.
std::string shape_repr(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Tensor parse_npy_bytes(const uint8_t* data, size_t size, const std::string& where) {
  if (size < kMagicSize + 2)
    fail(where, "file too short (" + std::to_string(size) + " bytes) for the magic and version");
  if (std::memcmp(data, kMagic, kMagicSize) != 0)
    fail(where, "not a .npy file (bad magic string; expected \\x93NUMPY)");
  const int major = data[6], minor = data[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(where, "unsupported .npy format version " + std::to_string(major) + "." +
                    std::to_string(minor) + " (1.0, 2.0 and 3.0 are supported)");
  const size_t length_size = major == 1 ? 2 : 4;
  const size_t header_start = kMagicSize + 2 + length_size;
  if (size < header_start) fail(where, "file ends inside the header length");
  const uint8_t* p = data + kMagicSize + 2;
  const size_t header_length =
      major == 1 ? size_t{p[0]} | size_t{p[1]} << 8
                 : size_t{p[0]} | size_t{p[1]} << 8 | size_t{p[2]} << 16 | size_t{p[3]} << 24;
  if (header_length > size - header_start)
    fail(where, "header length " + std::to_string(header_length) + " runs past the end of the " +
                    std::to_string(size) + "-byte file");

  const std::string_view text(reinterpret_cast<const char*>(data + header_start), header_length);
  const Header header = HeaderParser(text, where).parse();
  const FileType& type = file_type(header.descr, where);
  if (header.fortran_order)
    fail(where, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");

  // The one shape check of attograd: at most 2^60 elements, so the byte
  // counts below cannot overflow.
  const int64_t numel = shape_numel(header.shape, where.c_str());
  const size_t data_start = header_start + header_length;
  const size_t expected = static_cast<size_t>(numel) * type.item_size;
  if (size - data_start != expected)
    fail(where, "data is " + std::to_string(size - data_start) + " bytes but shape " +
                    shape_str(header.shape) + " of '" + std::string(type.descr) + "' needs " +
                    std::to_string(expected));

  Tensor t = empty(header.shape, type.dtype);
  const uint8_t* src = data + data_start;
  const size_t n = static_cast<size_t>(numel);
  if (type.descr == "<i4") {  // widened: each int32 becomes an int64
    int64_t* dst = t.data_ptr<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      int32_t v;
      std::memcpy(&v, src + 4 * i, 4);
      dst[i] = v;
    }
    return t;
  }
  switch (type.dtype) {
    case DType::Float32:
      std::memcpy(t.data_ptr<float>(), src, expected);
      break;
    case DType::Float64:
      std::memcpy(t.data_ptr<double>(), src, expected);
      break;
    case DType::Int64:
      std::memcpy(t.data_ptr<int64_t>(), src, expected);
      break;
    case DType::Bool: {
      // NumPy reads any nonzero byte as True. Copying the byte itself could
      // make a bool that is neither false nor true (undefined behaviour).
      bool* dst = t.data_ptr<bool>();
      for (size_t i = 0; i < n; ++i) dst[i] = src[i] != 0;
      break;
    }
  }
  return t;
}

std::vector<uint8_t> serialize(const Tensor& tensor, const char* op) {
  AG_CHECK(tensor.defined(), op, "undefined tensor (Tensor{})");
  AG_CHECK(tensor.dim() <= static_cast<int64_t>(kMaxDims), op,
           "NumPy arrays have at most " + std::to_string(kMaxDims) + " dimensions, got " +
               std::to_string(tensor.dim()));
  const Tensor t = tensor.detach().contiguous();
  const FileType& type = file_type(t.dtype());
  // Exactly what numpy.save writes: sorted keys, a trailing ", ", and room for
  // the first dimension to grow to 21 digits (numpy appends in place).
  std::string dict = "{'descr': '" + std::string(type.descr) +
                     "', 'fortran_order': False, 'shape': " + shape_repr(t.shape()) + ", }";
  if (t.dim() > 0) dict.append(21 - std::to_string(t.shape()[0]).size(), ' ');
  // Padded so the data starts at a multiple of 64; at most 64 dims keeps the
  // header far below version 1.0's 16-bit length limit.
  const size_t text_size = dict.size() + 1;  // + '\n'
  const size_t padding = kAlign - (kMagicSize + 4 + text_size) % kAlign;
  const size_t header_length = text_size + padding;
  const size_t nbytes = static_cast<size_t>(t.numel()) * type.item_size;

  std::vector<uint8_t> out(kMagic, kMagic + kMagicSize);
  out.reserve(kMagicSize + 4 + header_length + nbytes);
  out.insert(out.end(), {1, 0});  // version 1.0
  out.push_back(static_cast<uint8_t>(header_length));
  out.push_back(static_cast<uint8_t>(header_length >> 8));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), padding, ' ');
  out.push_back('\n');
  const size_t data_start = out.size();
  out.resize(data_start + nbytes);
  uint8_t* dst = out.data() + data_start;
  switch (t.dtype()) {
    case DType::Float32:
      std::memcpy(dst, t.data_ptr<float>(), nbytes);
      break;
    case DType::Float64:
      std::memcpy(dst, t.data_ptr<double>(), nbytes);
      break;
    case DType::Int64:
      std::memcpy(dst, t.data_ptr<int64_t>(), nbytes);
      break;
    case DType::Bool:  // our bools are the bytes 0 and 1, as numpy's
      std::memcpy(dst, t.data_ptr<bool>(), nbytes);
      break;
  }
  return out;
}

std::map<std::string, Tensor> parse_npz_bytes(const uint8_t* data, size_t size,
                                              const std::string& where) {
  const std::vector<zip::Entry> entries = zip::read_directory(data, size, where);
  // numpy.savez names every member "<key>.npy"; anything else is not an .npz.
  constexpr std::string_view kSuffix = ".npy";
  for (const zip::Entry& e : entries)
    if (!e.name.ends_with(kSuffix))
      fail(where, "entry '" + e.name + "' is not a .npy file (numpy.savez writes <name>.npy)");

  std::map<std::string, Tensor> tensors;
  std::vector<uint8_t> inflated;
  for (const zip::Entry& e : entries) {
    const std::span<const uint8_t> bytes = zip::extract(data, e, inflated, where);
    tensors.emplace(
        e.name.substr(0, e.name.size() - kSuffix.size()),
        parse_npy_bytes(bytes.data(), bytes.size(), where + ": entry '" + e.name + "'"));
  }
  return tensors;
}

// The file's bytes, held in a Storage: a file too big for memory (a sparse
// 8 TB file, say) gives the ag::Error "op: out of memory" that a tensor would,
// not std::bad_alloc.
std::unique_ptr<Storage> read_file(const std::string& path, const char* op) {
  // file_size fails for anything but a regular file: a directory "opens" on
  // Linux and can report an absurd size.
  std::error_code error;
  const uintmax_t size = std::filesystem::file_size(path, error);
  std::ifstream in(path, std::ios::binary);
  AG_CHECK(!error && in.is_open(), op, "cannot open '" + path + "'");
  auto bytes = std::make_unique<Storage>(static_cast<size_t>(size), op);
  in.read(reinterpret_cast<char*>(bytes->data()), static_cast<std::streamsize>(size));
  AG_CHECK(in.gcount() == static_cast<std::streamsize>(size), op, "cannot read '" + path + "'");
  return bytes;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes, const char* op) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  AG_CHECK(out.is_open(), op, "cannot open '" + path + "' for writing");
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  out.close();
  AG_CHECK(!out.fail(), op, "writing '" + path + "' failed");
}

}  // namespace

// ---- public API ------------------------------------------------------------------------

Tensor parse_npy(const uint8_t* data, size_t size) {
  return parse_npy_bytes(data, size, "parse_npy");
}

std::map<std::string, Tensor> parse_npz(const uint8_t* data, size_t size) {
  return parse_npz_bytes(data, size, "parse_npz");
}

std::vector<uint8_t> serialize_npy(const Tensor& t) {
  return serialize(t, "serialize_npy");
}

Tensor load_npy(const std::string& path) {
  const std::unique_ptr<Storage> bytes = read_file(path, "load_npy");
  return parse_npy_bytes(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->nbytes(),
                         "load_npy: '" + path + "'");
}

void save_npy(const std::string& path, const Tensor& t) {
  write_file(path, serialize(t, "save_npy"), "save_npy");
}

std::map<std::string, Tensor> load_npz(const std::string& path) {
  const std::unique_ptr<Storage> bytes = read_file(path, "load_npz");
  return parse_npz_bytes(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->nbytes(),
                         "load_npz: '" + path + "'");
}

void save_npz(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  zip::Writer writer("save_npz: '" + path + "'");
  for (const auto& [name, tensor] : tensors) {
    AG_CHECK(tensor.defined(), "save_npz", "tensor '" + name + "' is undefined (Tensor{})");
    // Python's zipfile cuts a member name at its first NUL, so numpy.load
    // would see another name (or none ending in .npy).
    AG_CHECK(name.find('\0') == std::string::npos, "save_npz",
             "tensor name '" + name.substr(0, name.find('\0')) +
                 "\\0...' contains a NUL byte (numpy.load would cut the name there)");
    writer.add(name + ".npy", serialize(tensor, "save_npz"));
  }
  write_file(path, writer.finish(), "save_npz");
}

}  // namespace ag
