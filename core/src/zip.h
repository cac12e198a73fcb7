// The zip container behind .npz files (internal to attograd_core).
//
// An .npz file is a plain zip archive holding one .npy file per array, so the
// npz code in npy.cpp only needs two things from this header: read the
// archive's directory and the bytes of each member, and write an archive of
// uncompressed members. zip.cpp explains the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ag::zip {

// One member as the central directory describes it, already validated:
// its bytes lie inside the buffer, before the central directory, and do not
// overlap another member's.
struct Entry {
  std::string name;     // as stored (numpy writes UTF-8)
  uint16_t method = 0;  // kStored or kDeflated
  uint32_t crc32 = 0;   // of the uncompressed bytes
  uint64_t compressed_size = 0;
  uint64_t size = 0;         // uncompressed
  uint64_t data_offset = 0;  // first byte of the (compressed) data
};

inline constexpr uint16_t kStored = 0;
inline constexpr uint16_t kDeflated = 8;

// Parses the end record, the central directory and every local header of the
// archive in data[0, size). Rejects (ag::Error, message prefixed by `where`)
// anything malformed, encrypted, split over several disks, compressed with a
// method other than stored/deflate, or holding the same name twice.
std::vector<Entry> read_directory(const uint8_t* data, size_t size, const std::string& where);

// The uncompressed bytes of `entry`, CRC-checked: a view into `data` for a
// stored member, or into `inflated` (resized to fit) for a deflated one.
std::span<const uint8_t> extract(const uint8_t* data, const Entry& entry,
                                 std::vector<uint8_t>& inflated, const std::string& where);

// Builds an archive of stored (uncompressed) members in memory, the way
// numpy.savez writes them.
class Writer {
 public:
  explicit Writer(std::string where) : where_(std::move(where)) {}
  void add(const std::string& name, std::span<const uint8_t> bytes);
  // Appends the central directory and end record; returns the whole archive.
  std::vector<uint8_t> finish();

 private:
  struct Member {
    std::string name;
    uint32_t crc32;
    uint32_t size;
    uint32_t offset;  // of its local header
  };
  std::string where_;
  std::vector<uint8_t> out_;
  std::vector<Member> members_;
};

}  // namespace ag::zip
