// The reverse and sort tasks (see digits.h).
#include "attograd/translate/digits.h"

#include <algorithm>
#include <string>

#include "attograd/error.h"

namespace ag::translate {

Example random_digits_example(Task task, std::mt19937_64& rng) {
  AG_CHECK(task == Task::Reverse || task == Task::Sort, "random_digits_example",
           std::string("task '") + task_name(task) + "' is not a digit-string task");
  const auto length = std::uniform_int_distribution<int>(3, static_cast<int>(kMaxDigits))(rng);
  std::uniform_int_distribution<int> digit(0, 9);
  Example e;
  for (int i = 0; i < length; ++i) e.source += static_cast<char>('0' + digit(rng));
  if (task == Task::Reverse) {
    e.target.assign(e.source.rbegin(), e.source.rend());
  } else {
    e.target = e.source;
    std::sort(e.target.begin(), e.target.end());
  }
  return e;
}

TaskData digits_data(Task task, int64_t num_train, int64_t num_heldout, uint64_t seed) {
  TaskData data =
      draw_split([task](std::mt19937_64& rng) { return random_digits_example(task, rng); },
                 [](const Example& e) { return e.source; }, num_train, num_heldout, seed);
  data.max_source_length = kMaxDigits;
  data.max_target_length = kMaxDigits;
  return data;
}

}  // namespace ag::translate
