// Holds the kernels' thread count at 1 while it lives (translate's private
// helper): where whole batches or shards run side by side on threads of
// their own (data-parallel training, the Pronouncer's batches), they are the
// parallelism, and a kernel splitting itself across the machine's cores would
// only contend with the other threads for them.
#pragma once

#include "attograd/threads.h"

namespace ag::translate {

class OneKernelThread {
 public:
  OneKernelThread() : previous_(get_num_threads()) { set_num_threads(1); }
  ~OneKernelThread() { set_num_threads(previous_); }
  OneKernelThread(const OneKernelThread&) = delete;
  OneKernelThread& operator=(const OneKernelThread&) = delete;

 private:
  int previous_;
};

}  // namespace ag::translate
