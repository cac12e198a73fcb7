// Worker threads for the kernels: how many ag::detail::parallel_for uses.
// Its own header, below tensor.h, so that the kernels can ask for the thread
// count without depending on the Tensor layer above them.
#pragma once

// Whether this build has worker threads. WebAssembly built without pthreads
// (Emscripten's default, what the browser viewer uses) has none: every loop
// runs on the calling thread and no std::thread is ever created.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
#define ATTOGRAD_HAS_THREADS 0
#else
#define ATTOGRAD_HAS_THREADS 1
#endif

namespace ag {

// Default: all cores. n outside [1, kMaxThreads] throws ag::Error. In a build
// without threads (ATTOGRAD_HAS_THREADS == 0) a valid n is accepted and
// clamped to 1, so code written for the desktop runs unchanged:
// get_num_threads() is then always 1.
inline constexpr int kMaxThreads = 1024;
void set_num_threads(int n);
int get_num_threads();

}  // namespace ag
