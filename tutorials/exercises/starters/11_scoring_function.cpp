// Exercise 11: your own scoring function, a class of nn's table.
//
// Attention is softmax(a(q, k)) v; the scoring function a is the one part
// that varies, and attograd keeps each in a class of its own (nn/scoring.h,
// docs/scoring.md). Write Luong's "general" score as one:
//
//   a(q, k) = q^T W_a k      q [B, Tq, q], k [B, Tk, k], W_a [q, k]
//
// as a subclass of ag::nn::ScoringFunction:
//   - its parameter: W_a, an ag::nn::Linear from the keys' k features to the
//     queries' q (Linear(sizes.key_size, sizes.query_size, /*bias=*/false)),
//     registered in the constructor under the name "W_a" (register_module),
//     so that its state dict holds "W_a.weight" [q, k];
//   - remember_keys(keys): what does not depend on the query, computed once
//     per source: k' = W_a(keys) = k W_a^T, [B, Tk, k] -> [B, Tk, q];
//   - score(queries, remembered keys): q . k'_j for every query and key,
//     [B, Tq, q] @ [B, q, Tk] -> [B, Tq, Tk] (ag::bmm, ag::transpose).
// The base class does the rest: the masks, the softmax, the values' product.
// make_my_scoring returns your class for the sizes the table is given; the
// grader registers it as "my_general" and builds it by name.
//
// Grade it: scripts/exercise.sh 11
#include <attograd/nn/layers.h>

#include "exercises.h"

namespace ex {

// TODO: your class here, deriving from ag::nn::ScoringFunction.

std::unique_ptr<ag::nn::ScoringFunction> make_my_scoring(const ag::nn::ScoringSizes& sizes) {
  // TODO: return std::make_unique<YourClass>(sizes);
  (void)sizes;
  throw ag::Error("not written yet: the TODO in your exercise file");
}

}  // namespace ex
