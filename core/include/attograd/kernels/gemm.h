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

// ---- kernel paths: which one gemm() runs, and forcing one (tests, benchmarks) ----
enum class GemmPath {
  Naive,   // gemm_naive
  Scalar,  // blocked and packed, portable C++ micro-kernel
  Avx2,    // x86-64 AVX2 + FMA micro-kernel
  Avx512,  // x86-64 AVX-512F micro-kernel
  Neon,    // AArch64 Advanced SIMD micro-kernel
};
// The paths this build can run on this CPU, slowest first; gemm() runs the last.
std::vector<GemmPath> available_gemm_paths();
GemmPath default_gemm_path();
const char* gemm_path_name(GemmPath path);  // "naive", "scalar", "avx2", "avx512", "neon"
const char* gemm_path_name();               // the path gemm() runs
// gemm through one given path; throws ag::Error if it is not available here.
void gemm_with_path(GemmPath path, const GemmShape& s, const float* A, const float* B, float* C);
void gemm_with_path(GemmPath path, const GemmShape& s, const double* A, const double* B, double* C);

}  // namespace ag::kernels
