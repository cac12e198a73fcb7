// Files for the file scene's tests (test_screen_file, test_file_scene_ui):
// good ones written with save_npy/save_npz, and the bad ones a learner may
// drop on the viewer. Each function writes one file and returns its path.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "attograd/attograd.h"

namespace ag::file_fixtures {

// A fresh directory for one test program's files.
inline std::string directory(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("attograd-" + name + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline std::string write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Attention weights [2, 3, 4, 5]: rows of softmax(randn), seeded.
inline Tensor example_weights() {
  manual_seed(11);
  return softmax(randn({2, 3, 4, 5}), -1);
}

// A text file named like a tensor.
inline std::string text_file(const std::string& dir) {
  return write_bytes(dir + "/notes.npy", "these are my notes, not an array\n");
}

// A .npy cut short in its data.
inline std::string truncated_npy(const std::string& dir) {
  const std::vector<uint8_t> bytes = serialize_npy(example_weights());
  return write_bytes(dir + "/truncated.npy", std::string(bytes.begin(), bytes.end() - 100));
}

// A well-formed header announcing [100000, 100000] float32 (40 GB), then 16
// bytes: the viewer must refuse it without trying to allocate it.
inline std::string huge_header_npy(const std::string& dir) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return write_bytes(dir + "/huge.npy", bytes + header + std::string(16, '\0'));
}

// A 1-D tensor: not a [..., Tq, Tk] map.
inline std::string one_dim_npy(const std::string& dir) {
  const std::string path = dir + "/one_dim.npy";
  save_npy(path, arange(5));
  return path;
}

// The state dict of a module the viewer does not know (a Linear layer).
inline std::string linear_state_dict(const std::string& dir) {
  const std::string path = dir + "/linear.npz";
  nn::Linear linear(3, 2);
  save_npz(path, linear.state_dict());
  return path;
}

// An npz mixing a parameter and a weight array.
inline std::string mixed_npz(const std::string& dir) {
  const std::string path = dir + "/mixed.npz";
  save_npz(path, {{"W_q.weight", ones({4, 2})}, {"attention", example_weights()}});
  return path;
}

}  // namespace ag::file_fixtures
