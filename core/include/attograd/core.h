// Everything in core/: tensors, autograd, ops, gradcheck, .npy/.npz.
#pragma once

#include "attograd/autograd.h"
#include "attograd/dtype.h"
#include "attograd/error.h"
#include "attograd/gradcheck.h"
#include "attograd/npy.h"
#include "attograd/ops.h"
#include "attograd/reference.h"
#include "attograd/tensor.h"
