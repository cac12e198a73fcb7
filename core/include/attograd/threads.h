// Worker threads for the kernels: how many ag::detail::parallel_for uses.
// Its own header, below tensor.h, so that the kernels can ask for the thread
// count without depending on the Tensor layer above them.
#pragma once

namespace ag {

// Default: all cores. n outside [1, kMaxThreads] throws ag::Error.
inline constexpr int kMaxThreads = 1024;
void set_num_threads(int n);
int get_num_threads();

}  // namespace ag
