// The reverse and sort tasks (see digits.h).
#include "attograd/translate/digits.h"

#include <algorithm>
#include <string>

#include "attograd/error.h"
#include "attograd/translate/tasks.h"

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

TaskSpec digits_task(Task task) {
  AG_CHECK(task == Task::Reverse || task == Task::Sort, "digits_task",
           std::string("not a digits task: ") + task_name(task));
  TaskSpec spec;
  spec.task = task;
  spec.summary = task == Task::Reverse ? "reverse: \"48213\" -> \"31284\" (digit strings)"
                                       : "sort: \"48213\" -> \"12348\" (digit strings)";
  spec.data = [task](const DatasetOptions& o) {
    return digits_data(task, o.num_train, o.num_heldout, o.seed);
  };
  spec.defaults = [task](const std::string& model) {
    // The steps that reach >= 99% held-out exact match (docs/seq2seq.md,
    // docs/transformer.md). The strings come from ~10^10: a larger training
    // set keeps the model from learning its examples by heart (sort: 98%
    // held-out after 3000 steps on 50,000 examples, 99% on 200,000).
    TaskDefaults d = d2l_task_defaults(model);
    d.steps = task == Task::Reverse && model != "transformer" ? 3000 : 4000;
    d.train_size = 200000;
    return d;
  };
  return spec;
}

}  // namespace ag::translate
