// attograd — one header for everything: core (tensors, autograd, ops,
// gradcheck, .npy/.npz) and nn (masks, attention, modules, recurrent layers,
// losses, optimizers).
#pragma once

#include "attograd/core.h"
#include "attograd/nn/attention.h"
#include "attograd/nn/encoder_decoder.h"
#include "attograd/nn/functional.h"
#include "attograd/nn/keras.h"
#include "attograd/nn/layers.h"
#include "attograd/nn/masks.h"
#include "attograd/nn/module.h"
#include "attograd/nn/norm.h"
#include "attograd/nn/optim.h"
#include "attograd/nn/rnn.h"
#include "attograd/nn/scoring.h"
#include "attograd/nn/seq2seq.h"
#include "attograd/nn/training.h"
#include "attograd/nn/transformer.h"
