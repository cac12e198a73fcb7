// GEMM: the one entry point every matmul-shaped computation goes through
// (matmul, bmm, linear, and all their backwards).
//
//   C[b] = op(A[b]) @ op(B[b]) + beta * C[b]     for b in [0, batch)
//
// Row-major. op(X) is X or X^T (trans_x). op(A) is [M, K], op(B) is [K, N],
// C is [M, N]. lda/ldb/ldc are row strides of the stored (untransposed) A, B,
// C in elements; stride_a/b/c step from one batch item to the next (0 repeats
// the same matrix: that is how matmul broadcasts a weight over a batch).
// beta is 0 (overwrite C; C may be uninitialised) or 1 (accumulate into C).
#pragma once

#include <cstdint>
#include <vector>

namespace ag::kernels {

struct GemmShape {
  int64_t batch = 1;
  int64_t M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  float beta = 0;  // 0 or 1
};

// The fast path (chosen at run time by CPU features; see gemm.cpp).
void gemm(const GemmShape& s, const float* A, const float* B, float* C);
void gemm(const GemmShape& s, const double* A, const double* B, double* C);

// ---- kernel paths: which one gemm() runs, and forcing one (tests, benchmarks) ----
enum class GemmPath {
  Naive,   // gemm_naive
  Scalar,  // blocked and packed, portable C++ micro-kernel
  Avx2,    // x86-64 AVX2 + FMA micro-kernel
  Avx512,  // x86-64 AVX-512F micro-kernel
  Neon,    // AArch64 Advanced SIMD micro-kernel
};
// The paths this build can run on this CPU, slowest first.
std::vector<GemmPath> available_gemm_paths();
// The path gemm() runs: the instruction set's (attograd/kernels/instruction_set.h;
// ATTOGRAD_ISA=avx2 on an AVX-512 machine runs the AVX2 micro-kernel).
GemmPath default_gemm_path();

// ---- a B packed once, for many products with it ----
// gemm() copies op(B) into the slivers its micro-kernel reads (gemm_driver.h)
// at every call, unless B is small. A recurrence multiplies by the same
// weight at every step (the GRU's W_hh, forward and backward), so it packs
// the weight once and each step's product reads the packed copy.
template <typename T>
class PackedB {
 public:
  // The elements the packed op(B) of s takes on `path`: the storage to give
  // the constructor (a tensor's, from the caching allocator: the kernels do
  // not allocate what outlives a call).
  static int64_t elements(const GemmShape& s, GemmPath path = default_gemm_path());
  // Packs op(B) of s (s.K x s.N, read with s.trans_b and s.ldb; the other
  // fields are not read) into `storage` for `path`'s micro-kernel (naive: op(B)
  // as a plain row-major matrix). Throws ag::Error if the path is not
  // available here.
  PackedB(const GemmShape& s, const T* B, T* storage, GemmPath path = default_gemm_path());
  int64_t K() const { return K_; }
  int64_t N() const { return N_; }
  bool trans_b() const { return trans_b_; }  // how B was stored (a recording shows it)
  GemmPath path() const { return path_; }
  const T* data() const { return data_; }

 private:
  int64_t K_, N_;
  bool trans_b_;
  GemmPath path_;
  const T* data_;
};
// C[b] = op(A[b]) @ op(B) + beta * C[b] on the packed B's path, every batch
// item with the same op(B); s.K and s.N must be the packed B's (ag::Error
// otherwise), and s's other fields for B (trans_b, ldb, stride_b) are not read.
void gemm(const GemmShape& s, const float* A, const PackedB<float>& B, float* C);
void gemm(const GemmShape& s, const double* A, const PackedB<double>& B, double* C);

// ---- recording the products a program makes (bench_gemm's step shapes) ----
// While a recording runs, gemm() counts and times its calls by shape (batch,
// M, N, K, the transposes, float32 or float64), from every thread. Not
// recording, a call costs one relaxed atomic load more.
struct GemmCall {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool trans_a = false, trans_b = false, float64 = false;
  int64_t calls = 0;
  double seconds = 0;  // the calls' wall time, summed
};
void start_gemm_recording();  // forgets an earlier recording's calls
// Ends the recording: its shapes, the most time first.
std::vector<GemmCall> stop_gemm_recording();

// The plain triple loop: the reference the tests compare the fast path with.
void gemm_naive(const GemmShape& s, const float* A, const float* B, float* C);
void gemm_naive(const GemmShape& s, const double* A, const double* B, double* C);

// ---- the paths' names, and forcing a path (tests, benchmarks) ----
const char* gemm_path_name(GemmPath path);  // "naive", "scalar", "avx2", "avx512", "neon"
const char* gemm_path_name();               // the path gemm() runs
// gemm through one given path; throws ag::Error if it is not available here.
void gemm_with_path(GemmPath path, const GemmShape& s, const float* A, const float* B, float* C);
void gemm_with_path(GemmPath path, const GemmShape& s, const double* A, const double* B, double* C);

}  // namespace ag::kernels
