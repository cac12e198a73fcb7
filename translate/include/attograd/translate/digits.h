// The digit-string tasks, drawn from a seeded RNG: a string of 3 to 10
// digits, reversed ("48213" -> "31284") or sorted ("48213" -> "12348").
#pragma once

#include <cstdint>
#include <random>

#include "attograd/translate/task.h"

namespace ag::translate {

inline constexpr int64_t kMaxDigits = 10;  // the longest source and target

// What is done to the digits: the two tasks' one difference.
enum class DigitOrder { Reversed, Sorted };

// One example: random digits and their reverse or sorted order.
Example random_digits_example(DigitOrder order, std::mt19937_64& rng);

// draw_split of random_digits_example, disjoint by source (task.h).
TaskData digits_data(DigitOrder order, int64_t num_train, int64_t num_heldout, uint64_t seed);

}  // namespace ag::translate
