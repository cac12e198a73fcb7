// Reading and writing the zip archives that hold .npz files.
//
// A zip archive is a sequence of members followed by a directory of them:
//
//   [local header 1][data 1] [local header 2][data 2] ...   the members
//   [central header 1][central header 2] ...                the central directory
//   ([zip64 end record][zip64 locator])                     only for huge archives
//   [end record][archive comment]                           at the very end
//
// All integers are little-endian. The records we parse, with byte offsets:
//
//   end of central directory record, 22 bytes + comment
//     0 signature "PK\5\6"   4 this disk   6 disk holding the directory
//     8 entries on this disk   10 entries in total   12 directory size
//     16 directory offset   20 comment length
//   central directory header, 46 bytes + name + extra + comment
//     0 signature "PK\1\2"   4 version made by   6 version needed   8 flags
//     10 method   12 time   14 date   16 CRC-32   20 compressed size
//     24 uncompressed size   28 name length   30 extra length   32 comment length
//     34 disk where the member starts   36 internal attributes
//     38 external attributes   42 offset of the local header
//   local file header, 30 bytes + name + extra, then the data
//     0 signature "PK\3\4"   4 version needed   6 flags   8 method   10 time
//     12 date   14 CRC-32   18 compressed size   22 uncompressed size
//     26 name length   28 extra length
//
// A reader starts from the end: it finds the end record (the last thing in the
// file but for a comment), which points at the central directory, whose
// headers point at the local headers. The directory is authoritative: the
// local header repeats name, method, CRC and sizes, but a writer streaming to
// a pipe (flag bit 3) cannot know them yet and writes zeros there, putting
// them in a "data descriptor" after the data instead.
//
// Zip64: fields are 32 bits (16 for entry counts). A larger value is written
// as 0xFFFFFFFF (0xFFFF) with the real one in a zip64 "extra field" (id 1) of
// the central header, and the end record's values in a zip64 end record found
// through a locator just before the end record. numpy.savez writes zip64
// extra fields in every local header and the rest only for huge arrays.
//
// Members are stored (method 0, the bytes as they are) by numpy.savez and
// deflated (method 8, raw deflate without zlib's header) by
// numpy.savez_compressed; each carries the CRC-32 of its uncompressed bytes.
//
// Every offset and length below comes from the file, so each one is checked
// against the buffer before it is used: a malformed archive raises ag::Error,
// it never makes us read outside the buffer or allocate more than the data
// could decompress to.
#include "zip.h"

#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <set>

#include "attograd/error.h"

namespace ag::zip {

// Offsets and sizes are read as 64-bit numbers and checked against the
// archive's size (a size_t) before use; only an entry's inflated size can
// exceed it, which read_directory checks where size_t is narrower (wasm32).

namespace {

constexpr uint32_t kLocalSignature = 0x04034b50;    // "PK\3\4"
constexpr uint32_t kCentralSignature = 0x02014b50;  // "PK\1\2"
constexpr uint32_t kEndSignature = 0x06054b50;      // "PK\5\6"
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kLocalSize = 30;
constexpr size_t kCentralSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint32_t kMarker32 = 0xFFFFFFFF;  // "see the zip64 extra field"
constexpr uint16_t kMarker16 = 0xFFFF;
constexpr uint16_t kFlagEncrypted = 1 << 0;
constexpr uint16_t kFlagUtf8Name = 1 << 11;
// Deflate emits at most one 258-byte match per 2 bits, so no stream inflates
// to more than 1032 times its size: a larger declared size is a lie (or a bomb).
constexpr uint64_t kMaxDeflateRatio = 1032;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw Error(where + ": " + what);
}

uint16_t u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}
uint32_t u32(const uint8_t* p) {
  return u16(p) | static_cast<uint32_t>(u16(p + 2)) << 16;
}
uint64_t u64(const uint8_t* p) {
  return u32(p) | static_cast<uint64_t>(u32(p + 4)) << 32;
}

// True when [offset, offset + length) lies inside [0, limit), without overflow.
bool fits(uint64_t offset, uint64_t length, uint64_t limit) {
  return offset <= limit && length <= limit - offset;
}

std::string entry_label(const std::string& name) {
  return "entry '" + name + "'";
}

// Where the central directory lies and how many headers it holds.
struct Directory {
  uint64_t offset;
  uint64_t size;
  uint64_t count;
  uint64_t end;  // where the directory must end: the (zip64) end record
};

// Reads the zip64 end record through the locator just before the end record.
Directory read_zip64_end(const uint8_t* data, size_t locator, const std::string& where) {
  const uint8_t* l = data + locator;
  if (u32(l + 4) != 0 || u32(l + 16) != 1)
    fail(where, "multi-disk (split) archives are not supported");
  const uint64_t record = u64(l + 8);
  if (!fits(record, kZip64EndSize, locator) || u32(data + record) != kZip64EndSignature)
    fail(where, "zip64 end record missing at offset " + std::to_string(record));
  const uint8_t* r = data + record;
  // The record's own size field counts the bytes after it (offset 12 on); it
  // must reach exactly the locator.
  if (u64(r + 4) != locator - record - 12)
    fail(where, "zip64 end record size field does not match its position");
  if (u32(r + 16) != 0 || u32(r + 20) != 0 || u64(r + 24) != u64(r + 32))
    fail(where, "multi-disk (split) archives are not supported");
  return {u64(r + 48), u64(r + 40), u64(r + 32), record};
}

Directory read_end_record(const uint8_t* data, size_t size, const std::string& where) {
  if (size < kEndSize)
    fail(where, "too short to be a zip archive (" + std::to_string(size) + " bytes)");
  // The end record is followed only by a comment of at most 65535 bytes:
  // scan backwards for its signature and take the first record whose comment
  // length reaches exactly the end of the file.
  size_t pos = size - kEndSize;
  const size_t lowest = pos > 0xFFFF ? pos - 0xFFFF : 0;
  while (!(u32(data + pos) == kEndSignature && pos + kEndSize + u16(data + pos + 20) == size)) {
    if (pos == lowest)
      fail(where, "no zip end-of-central-directory record (not a zip archive, or truncated)");
    --pos;
  }
  const uint8_t* e = data + pos;
  const uint16_t count = u16(e + 10);
  const uint32_t dir_size = u32(e + 12), dir_offset = u32(e + 16);
  // Python's zipfile, like us, trusts a zip64 end record whenever its locator
  // is there, even if the plain end record's values did not overflow.
  if (pos >= kZip64LocatorSize && u32(data + pos - kZip64LocatorSize) == kZip64LocatorSignature)
    return read_zip64_end(data, pos - kZip64LocatorSize, where);
  if (count == kMarker16 || dir_size == kMarker32 || dir_offset == kMarker32)
    fail(where, "the end record asks for zip64 but there is no zip64 locator before it");
  if (u16(e + 4) != 0 || u16(e + 6) != 0 || u16(e + 8) != count)
    fail(where, "multi-disk (split) archives are not supported");
  return {dir_offset, dir_size, count, pos};
}

// Replaces each field holding the 0xFFFFFFFF marker by its 64-bit value from
// the zip64 extra field (id 1), which lists them in this fixed order:
// uncompressed size, compressed size, local header offset.
void apply_zip64_extra(const uint8_t* extra, size_t length, uint64_t* fields[3],
                       const std::string& where) {
  if (std::none_of(fields, fields + 3, [](const uint64_t* f) { return *f == kMarker32; })) return;
  size_t pos = 0;
  while (pos < length) {
    if (length - pos < 4) fail(where, "truncated extra field");
    const uint16_t id = u16(extra + pos), field_length = u16(extra + pos + 2);
    if (field_length > length - pos - 4) fail(where, "extra field runs past its header");
    if (id == 1) {
      size_t at = pos + 4;
      for (int i = 0; i < 3; ++i) {
        if (*fields[i] != kMarker32) continue;
        if (at + 8 > pos + 4 + field_length) fail(where, "zip64 extra field too short");
        *fields[i] = u64(extra + at);
        at += 8;
      }
      return;
    }
    pos += 4 + field_length;
  }
  fail(where, "sizes marked 0xFFFFFFFF but no zip64 extra field");
}

// Bytes of the archive a member occupies: local header to end of data.
struct Span {
  uint64_t begin, end;
  size_t index;
};

// Checks the local header of `entry` (found at `local`) against its central
// header and returns the offset of its data.
uint64_t check_local_header(const uint8_t* data, uint64_t local, const Directory& dir,
                            const uint8_t* central, const Entry& entry, const std::string& where) {
  if (!fits(local, kLocalSize, dir.offset) || u32(data + local) != kLocalSignature)
    fail(where, "no local header at offset " + std::to_string(local));
  const uint8_t* l = data + local;
  const uint16_t name_length = u16(l + 26), extra_length = u16(l + 28);
  if (!fits(local + kLocalSize, uint64_t{name_length} + extra_length, dir.offset))
    fail(where, "local header runs into the central directory");
  if (name_length != entry.name.size() || std::memcmp(l + 30, entry.name.data(), name_length) != 0)
    fail(where, "local header names a different file");
  const uint16_t flags = u16(l + 6);
  if (flags != u16(central + 8) || u16(l + 8) != entry.method)
    fail(where, "local and central headers disagree on flags or method");
  // With a data descriptor (flag bit 3) the local CRC and sizes are zeros.
  if (!(flags & (1 << 3))) {
    const bool sizes_agree = (u32(l + 18) == u32(central + 20) || u32(l + 18) == kMarker32) &&
                             (u32(l + 22) == u32(central + 24) || u32(l + 22) == kMarker32);
    if (u32(l + 14) != entry.crc32 || !sizes_agree)
      fail(where, "local and central headers disagree on CRC or sizes");
  }
  return local + kLocalSize + name_length + extra_length;
}

// Inflates the raw deflate stream in[0, in_size) into exactly out_size bytes.
void inflate_exact(const uint8_t* in, size_t in_size, size_t out_size, std::vector<uint8_t>& out,
                   const std::string& where) {
  try {
    out.assign(out_size, 0);
  } catch (const std::bad_alloc&) {  // a large archive may declare more than memory holds
    fail(where, "out of memory inflating " + std::to_string(out_size) + " bytes");
  }
  z_stream zs{};
  // Negative window bits: a raw deflate stream, without the zlib header.
  if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail(where, "cannot initialise zlib");
  struct Cleanup {
    z_stream* zs;
    ~Cleanup() { inflateEnd(zs); }
  } cleanup{&zs};
  Bytef sink = 0;  // zlib rejects a null output pointer even when there is no room
  zs.next_in = const_cast<Bytef*>(in);  // zlib's API is not const-correct; input is only read
  zs.next_out = out_size ? out.data() : &sink;
  size_t in_left = in_size, out_left = out_size;
  for (;;) {
    // zlib counts in 32-bit uInt: hand it buffers over 4 GiB in slices.
    if (zs.avail_in == 0) {
      zs.avail_in = static_cast<uInt>(std::min<size_t>(in_left, UINT_MAX));
      in_left -= zs.avail_in;
    }
    if (zs.avail_out == 0) {
      zs.avail_out = static_cast<uInt>(std::min<size_t>(out_left, UINT_MAX));
      out_left -= zs.avail_out;
    }
    const int status = inflate(&zs, Z_NO_FLUSH);
    if (status == Z_STREAM_END) break;
    if (status == Z_OK) continue;  // progress was made
    if (status == Z_BUF_ERROR) {   // no progress possible: out of input or of room
      if (zs.avail_out == 0 && out_left == 0)
        fail(where,
             "decompresses to more than the declared " + std::to_string(out_size) + " bytes");
      fail(where, "compressed data is truncated");
    }
    fail(where, std::string("corrupt deflate data (zlib: ") + (zs.msg ? zs.msg : "error") + ")");
  }
  if (zs.avail_in != 0 || in_left != 0) fail(where, "bytes left over after the deflate stream");
  if (zs.avail_out != 0 || out_left != 0)
    fail(where, "decompresses to " + std::to_string(zs.total_out) + " bytes, not the declared " +
                    std::to_string(out_size));
}

std::string hex32(uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", static_cast<unsigned>(v));
  return text;
}

// Without the UTF-8 flag, Python's zipfile would decode a non-ASCII name as cp437.
uint16_t name_flags(const std::string& name) {
  const bool ascii =
      std::all_of(name.begin(), name.end(), [](char ch) { return (ch & 0x80) == 0; });
  return ascii ? 0 : kFlagUtf8Name;
}

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v));
  put16(out, static_cast<uint16_t>(v >> 16));
}

}  // namespace

std::vector<Entry> read_directory(const uint8_t* data, size_t size, const std::string& where) {
  const Directory dir = read_end_record(data, size, where);
  if (dir.offset > dir.end || dir.size != dir.end - dir.offset)
    fail(where, "central directory (offset " + std::to_string(dir.offset) + ", " +
                    std::to_string(dir.size) + " bytes) does not end where the end record starts");
  if (dir.count > dir.size / kCentralSize)
    fail(where, "end record declares " + std::to_string(dir.count) +
                    " entries, more than the central directory can hold");

  std::vector<Entry> entries;
  std::vector<Span> spans;
  std::set<std::string> names;
  entries.reserve(dir.count);
  uint64_t pos = dir.offset;
  for (uint64_t i = 0; i < dir.count; ++i) {
    if (!fits(pos, kCentralSize, dir.end) || u32(data + pos) != kCentralSignature)
      fail(where, "central directory header #" + std::to_string(i) + " missing at offset " +
                      std::to_string(pos));
    const uint8_t* c = data + pos;
    const uint16_t name_length = u16(c + 28), extra_length = u16(c + 30);
    const uint64_t record = kCentralSize + name_length + extra_length + u16(c + 32);
    if (!fits(pos, record, dir.end))
      fail(where, "central directory header #" + std::to_string(i) + " runs past the directory");

    Entry e;
    e.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_length);
    const std::string entry_where = where + ": " + entry_label(e.name);
    const uint16_t flags = u16(c + 8);
    e.method = u16(c + 10);
    e.crc32 = u32(c + 16);
    e.compressed_size = u32(c + 20);
    e.size = u32(c + 24);
    uint64_t local = u32(c + 42);
    uint64_t* wide[3] = {&e.size, &e.compressed_size, &local};
    apply_zip64_extra(c + kCentralSize + name_length, extra_length, wide, entry_where);

    if (flags & kFlagEncrypted) fail(entry_where, "encrypted entries are not supported");
    if (e.method != kStored && e.method != kDeflated)
      fail(entry_where, "compression method " + std::to_string(e.method) +
                            " is not supported (only stored and deflate)");
    if (u16(c + 34) != 0) fail(where, "multi-disk (split) archives are not supported");
    if (!names.insert(e.name).second) fail(where, entry_label(e.name) + " appears twice");

    e.data_offset = check_local_header(data, local, dir, c, e, entry_where);
    if (!fits(e.data_offset, e.compressed_size, dir.offset))
      fail(entry_where, "declares " + std::to_string(e.compressed_size) +
                            " compressed bytes at offset " + std::to_string(e.data_offset) +
                            ", past the start of the central directory (offset " +
                            std::to_string(dir.offset) + ")");
    if (e.method == kStored && e.compressed_size != e.size)
      fail(entry_where, "stored entry with different compressed (" +
                            std::to_string(e.compressed_size) + ") and uncompressed (" +
                            std::to_string(e.size) + ") sizes");
    if constexpr (sizeof(size_t) < sizeof(uint64_t)) {
      if (e.size > std::numeric_limits<size_t>::max())
        fail(entry_where, "inflates to " + std::to_string(e.size) +
                              " bytes, more than a 32-bit build can address");
    }
    if (e.method == kDeflated && e.size / kMaxDeflateRatio > e.compressed_size)
      fail(entry_where, "declares " + std::to_string(e.size) + " bytes inflated from " +
                            std::to_string(e.compressed_size) + ", more than deflate can produce");
    spans.push_back({local, e.data_offset + e.compressed_size, entries.size()});
    entries.push_back(std::move(e));
    pos += record;
  }
  if (pos != dir.end)
    fail(where,
         "central directory has " + std::to_string(dir.end - pos) + " bytes after its last header");

  // Members sharing bytes would let a small file expand many times over.
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < spans.size(); ++i)
    if (spans[i].begin < spans[i - 1].end)
      fail(where, entry_label(entries[spans[i - 1].index].name) + " and " +
                      entry_label(entries[spans[i].index].name) + " overlap");
  return entries;
}

std::span<const uint8_t> extract(const uint8_t* data, const Entry& entry,
                                 std::vector<uint8_t>& inflated, const std::string& where) {
  const std::string entry_where = where + ": " + entry_label(entry.name);
  std::span<const uint8_t> bytes;
  if (entry.method == kStored) {
    bytes = {data + entry.data_offset, static_cast<size_t>(entry.size)};
  } else {
    inflate_exact(data + entry.data_offset, entry.compressed_size, entry.size, inflated,
                  entry_where);
    bytes = inflated;
  }
  const uint32_t crc = static_cast<uint32_t>(crc32_z(0, bytes.data(), bytes.size()));
  if (crc != entry.crc32)
    fail(entry_where, "CRC-32 mismatch (directory says " + hex32(entry.crc32) + ", data gives " +
                          hex32(crc) + ")");
  return bytes;
}

// ---- writing ------------------------------------------------------------------------
// Version 2.0 of the format, stored members, a fixed timestamp (1980-01-01,
// the earliest a zip can hold) so that the same tensors give the same bytes.

namespace {
constexpr uint16_t kVersion = 20;
constexpr uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;  // years since 1980, month, day
}  // namespace

void Writer::add(const std::string& name, std::span<const uint8_t> bytes) {
  if (name.size() > 0xFFFF) fail(where_, "entry name longer than 65535 bytes");
  // 0xFFFFFFFF and 0xFFFF are the zip64 markers: anything that large needs zip64.
  if (bytes.size() >= kMarker32 || out_.size() >= kMarker32 || members_.size() + 1 >= kMarker16)
    fail(where_, "archive would exceed 4 GiB or 65534 entries; zip64 output is not supported");
  const Member m{name, static_cast<uint32_t>(crc32_z(0, bytes.data(), bytes.size())),
                 static_cast<uint32_t>(bytes.size()), static_cast<uint32_t>(out_.size())};
  put32(out_, kLocalSignature);
  put16(out_, kVersion);
  put16(out_, name_flags(name));
  put16(out_, kStored);
  put16(out_, 0);  // time 00:00:00
  put16(out_, kDosDate);
  put32(out_, m.crc32);
  put32(out_, m.size);  // compressed
  put32(out_, m.size);  // uncompressed
  put16(out_, static_cast<uint16_t>(name.size()));
  put16(out_, 0);  // extra length
  out_.insert(out_.end(), name.begin(), name.end());
  out_.insert(out_.end(), bytes.begin(), bytes.end());
  members_.push_back(m);
}

std::vector<uint8_t> Writer::finish() {
  const uint64_t dir_offset = out_.size();
  if (dir_offset >= kMarker32)
    fail(where_, "archive would exceed 4 GiB; zip64 output is not supported");
  for (const Member& m : members_) {
    put32(out_, kCentralSignature);
    put16(out_, kVersion);  // made by: version 2.0, MS-DOS attribute conventions
    put16(out_, kVersion);  // needed to extract
    put16(out_, name_flags(m.name));
    put16(out_, kStored);
    put16(out_, 0);
    put16(out_, kDosDate);
    put32(out_, m.crc32);
    put32(out_, m.size);
    put32(out_, m.size);
    put16(out_, static_cast<uint16_t>(m.name.size()));
    put16(out_, 0);  // extra length
    put16(out_, 0);  // comment length
    put16(out_, 0);  // disk
    put16(out_, 0);  // internal attributes
    put32(out_, 0);  // external attributes
    put32(out_, m.offset);
    out_.insert(out_.end(), m.name.begin(), m.name.end());
  }
  const uint64_t dir_size = out_.size() - dir_offset;
  if (dir_size >= kMarker32) fail(where_, "central directory would exceed 4 GiB");
  put32(out_, kEndSignature);
  put16(out_, 0);  // this disk
  put16(out_, 0);  // disk holding the directory
  put16(out_, static_cast<uint16_t>(members_.size()));
  put16(out_, static_cast<uint16_t>(members_.size()));
  put32(out_, static_cast<uint32_t>(dir_size));
  put32(out_, static_cast<uint32_t>(dir_offset));
  put16(out_, 0);  // comment length
  members_.clear();
  return std::move(out_);
}

}  // namespace ag::zip
