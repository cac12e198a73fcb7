// Vocab, the generated tasks, padding and minibatches (see data.h).
#include "attograd/translate/data.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <numeric>
#include <set>
#include <utility>

namespace ag::translate {

// ---- vocabulary ------------------------------------------------------------------
const std::vector<std::string>& Vocab::reserved_tokens() {
  static const std::vector<std::string> reserved{"<pad>", "<bos>", "<eos>", "<unk>"};
  return reserved;
}

Vocab::Vocab() : Vocab(std::vector<std::vector<std::string>>{}) {}

Vocab::Vocab(const std::vector<std::vector<std::string>>& corpus, int64_t min_freq) {
  std::map<std::string, int64_t> counts;
  for (const auto& line : corpus)
    for (const auto& token : line) ++counts[token];
  std::vector<std::pair<std::string, int64_t>> by_frequency(counts.begin(), counts.end());
  // Most frequent first; std::map already gave byte order, which stable_sort keeps for ties.
  std::stable_sort(by_frequency.begin(), by_frequency.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  idx_to_token_ = reserved_tokens();
  for (const auto& [token, count] : by_frequency) {
    const bool reserved = std::find(idx_to_token_.begin(), idx_to_token_.begin() + 4, token) !=
                          idx_to_token_.begin() + 4;
    if (count >= min_freq && !reserved) idx_to_token_.push_back(token);
  }
  for (size_t i = 0; i < idx_to_token_.size(); ++i)
    token_to_idx_[idx_to_token_[i]] = static_cast<int64_t>(i);
  index_bytes();
}

Vocab Vocab::from_tokens(std::vector<std::string> idx_to_token) {
  const auto& reserved = reserved_tokens();
  AG_CHECK(idx_to_token.size() >= reserved.size() &&
               std::equal(reserved.begin(), reserved.end(), idx_to_token.begin()),
           "Vocab::from_tokens", "the tokens must start with <pad> <bos> <eos> <unk>");
  Vocab vocab;
  vocab.idx_to_token_ = std::move(idx_to_token);
  vocab.token_to_idx_.clear();
  for (size_t i = 0; i < vocab.idx_to_token_.size(); ++i) {
    const auto [it, inserted] =
        vocab.token_to_idx_.emplace(vocab.idx_to_token_[i], static_cast<int64_t>(i));
    AG_CHECK(inserted, "Vocab::from_tokens",
             "token '" + it->first + "' appears twice (index " + std::to_string(it->second) +
                 " and " + std::to_string(i) + ")");
  }
  vocab.index_bytes();
  return vocab;
}

void Vocab::index_bytes() {
  for (size_t byte = 0; byte < byte_to_idx_.size(); ++byte)
    byte_to_idx_[byte] = index(std::string(1, static_cast<char>(byte)));
}

int64_t Vocab::index(const std::string& token) const {
  const auto it = token_to_idx_.find(token);
  return it == token_to_idx_.end() ? kUnk : it->second;
}

std::vector<int64_t> Vocab::indices(const std::vector<std::string>& tokens) const {
  std::vector<int64_t> out;
  out.reserve(tokens.size());
  for (const auto& token : tokens) out.push_back(index(token));
  return out;
}

std::vector<int64_t> Vocab::char_indices(const std::string& text) const {
  std::vector<int64_t> out;
  out.reserve(text.size());
  for (const char c : text) out.push_back(byte_to_idx_[static_cast<unsigned char>(c)]);
  return out;
}

const std::string& Vocab::token(int64_t index) const {
  AG_CHECK(index >= 0 && index < size(), "Vocab::token",
           "index " + std::to_string(index) + " is outside [0, " + std::to_string(size()) + ")");
  return idx_to_token_[static_cast<size_t>(index)];
}

std::vector<std::string> Vocab::tokens(const std::vector<int64_t>& indices) const {
  std::vector<std::string> out;
  out.reserve(indices.size());
  for (int64_t index : indices) out.push_back(token(index));
  return out;
}

std::vector<std::string> tokenize_chars(const std::string& text) {
  std::vector<std::string> tokens;
  tokens.reserve(text.size());
  for (char c : text) tokens.emplace_back(1, c);
  return tokens;
}

std::string detokenize_chars(const std::vector<std::string>& tokens) {
  const auto& reserved = Vocab::reserved_tokens();
  std::string text;
  for (const auto& token : tokens)
    if (std::find(reserved.begin(), reserved.end(), token) == reserved.end()) text += token;
  return text;
}

// ---- tasks -----------------------------------------------------------------------
const char* task_name(Task task) {
  switch (task) {
    case Task::Dates:
      return "dates";
    case Task::Reverse:
      return "reverse";
    case Task::Sort:
      return "sort";
  }
  return "?";
}

Task task_from_name(const std::string& name) {
  for (Task task : {Task::Dates, Task::Reverse, Task::Sort})
    if (name == task_name(task)) return task;
  throw Error("task: unknown task '" + name + "' (expected dates, reverse or sort)");
}

// Howard Hinnant's days_from_civil / civil_from_days: exact for every
// proleptic Gregorian date, with no table and no time zone.
int64_t days_from_civil(const Date& date) {
  const int64_t y = date.year - (date.month <= 2 ? 1 : 0);
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t year_of_era = y - era * 400;  // [0, 399]
  const int64_t day_of_year =
      (153 * (date.month + (date.month > 2 ? -3 : 9)) + 2) / 5 + date.day - 1;  // [0, 365]
  const int64_t day_of_era =
      year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;  // [0, 146096]
  return era * 146097 + day_of_era - 719468;
}

Date civil_from_days(int64_t days) {
  days += 719468;
  const int64_t era = (days >= 0 ? days : days - 146096) / 146097;
  const int64_t day_of_era = days - era * 146097;
  const int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  const int64_t day_of_year =
      day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  const int64_t mp = (5 * day_of_year + 2) / 153;
  Date date;
  date.day = static_cast<int>(day_of_year - (153 * mp + 2) / 5 + 1);
  date.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  date.year = static_cast<int>(year_of_era + era * 400 + (date.month <= 2 ? 1 : 0));
  return date;
}

int weekday(const Date& date) {
  const int64_t days = days_from_civil(date);  // 1970-01-01 was a Thursday (4)
  return static_cast<int>(((days % 7 + 7) % 7 + 4) % 7);
}

namespace {

std::string two_digits(int value) {
  return std::string(1, static_cast<char>('0' + value / 10)) + static_cast<char>('0' + value % 10);
}

}  // namespace

std::string iso_date(const Date& date) {
  return std::to_string(date.year) + "-" + two_digits(date.month) + "-" + two_digits(date.day);
}

namespace {

constexpr std::array<const char*, 12> kMonths{"January",   "February", "March",    "April",
                                              "May",       "June",     "July",     "August",
                                              "September", "October",  "November", "December"};
constexpr std::array<const char*, 7> kWeekdays{"Sunday",   "Monday", "Tuesday", "Wednesday",
                                               "Thursday", "Friday", "Saturday"};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
std::string ordinal(int day) {
  const char* suffix = (day % 10 == 1 && day != 11)   ? "st"
                       : (day % 10 == 2 && day != 12) ? "nd"
                       : (day % 10 == 3 && day != 13) ? "rd"
                                                      : "th";
  return std::to_string(day) + suffix;
}

// Appends pieces to a source, recording which characters spell a field.
struct SourceWriter {
  Example example;
  SourceWriter& text(const std::string& s) {
    example.source += s;
    return *this;
  }
  SourceWriter& field(DateField field, const std::string& s) {
    const auto begin = static_cast<int64_t>(example.source.size());
    example.source += s;
    example.spans.push_back({field, begin, static_cast<int64_t>(example.source.size())});
    return *this;
  }
};

}  // namespace

// The formats: how people write "1979-05-03" (a Thursday).
//   0  3 may 1979                 7  Thu 3 May 1979
//   1  Thursday, May 3, 1979      8  1979/05/03
//   2  05/03/79 (US order)        9  3rd of May 1979
//   3  3.5.1979 (European order)  10 Thu, 03 May 1979
//   4  May 3rd '79                11 MAY 3, 1979
//   5  1979 May 3                 12 3 May 79
//   6  03-May-1979                13 thursday 3 may 1979
//                                 14 5/3/1979 (US order)
int num_date_formats() {
  return 15;
}

Example format_date(const Date& date, int format) {
  AG_CHECK(format >= 0 && format < num_date_formats(), "format_date",
           "format " + std::to_string(format) + " is outside [0, " +
               std::to_string(num_date_formats()) + ")");
  AG_CHECK(date.month >= 1 && date.month <= 12 && date.day >= 1 &&
               civil_from_days(days_from_civil(date)) == date,
           "format_date",
           "not a date: " + std::to_string(date.year) + "-" + std::to_string(date.month) + "-" +
               std::to_string(date.day));
  const std::string month = kMonths[static_cast<size_t>(date.month - 1)];
  const std::string mon = month.substr(0, 3);
  const std::string day_name = kWeekdays[static_cast<size_t>(weekday(date))];
  const std::string wkd = day_name.substr(0, 3);
  const std::string year = std::to_string(date.year);
  const std::string yy = two_digits(date.year % 100);
  const std::string d = std::to_string(date.day), dd = two_digits(date.day);
  const std::string m = std::to_string(date.month), mm = two_digits(date.month);
  using F = DateField;
  SourceWriter w;
  switch (format) {
    case 0:
      w.field(F::Day, d).text(" ").field(F::Month, lower(month)).text(" ").field(F::Year, year);
      break;
    case 1:
      w.text(day_name + ", ")
          .field(F::Month, month)
          .text(" ")
          .field(F::Day, d)
          .text(", ")
          .field(F::Year, year);
      break;
    case 2:
      w.field(F::Month, mm).text("/").field(F::Day, dd).text("/").field(F::Year, yy);
      break;
    case 3:
      w.field(F::Day, d).text(".").field(F::Month, m).text(".").field(F::Year, year);
      break;
    case 4:
      w.field(F::Month, month)
          .text(" ")
          .field(F::Day, ordinal(date.day))
          .text(" '")
          .field(F::Year, yy);
      break;
    case 5:
      w.field(F::Year, year).text(" ").field(F::Month, month).text(" ").field(F::Day, d);
      break;
    case 6:
      w.field(F::Day, dd).text("-").field(F::Month, mon).text("-").field(F::Year, year);
      break;
    case 7:
      w.text(wkd + " ")
          .field(F::Day, d)
          .text(" ")
          .field(F::Month, month)
          .text(" ")
          .field(F::Year, year);
      break;
    case 8:
      w.field(F::Year, year).text("/").field(F::Month, mm).text("/").field(F::Day, dd);
      break;
    case 9:
      w.field(F::Day, ordinal(date.day))
          .text(" of ")
          .field(F::Month, month)
          .text(" ")
          .field(F::Year, year);
      break;
    case 10:
      w.text(wkd + ", ")
          .field(F::Day, dd)
          .text(" ")
          .field(F::Month, mon)
          .text(" ")
          .field(F::Year, year);
      break;
    case 11:
      w.field(F::Month, upper(month)).text(" ").field(F::Day, d).text(", ").field(F::Year, year);
      break;
    case 12:
      w.field(F::Day, d).text(" ").field(F::Month, mon).text(" ").field(F::Year, yy);
      break;
    case 13:
      w.text(lower(day_name) + " ")
          .field(F::Day, d)
          .text(" ")
          .field(F::Month, lower(month))
          .text(" ")
          .field(F::Year, year);
      break;
    case 14:
      w.field(F::Month, m).text("/").field(F::Day, d).text("/").field(F::Year, year);
      break;
  }
  // The spans in field order (year, month, day), whatever the format's order.
  std::sort(w.example.spans.begin(), w.example.spans.end(),
            [](const FieldSpan& a, const FieldSpan& b) { return a.field < b.field; });
  w.example.target = iso_date(date);
  return w.example;
}

namespace {

std::string random_digits(std::mt19937_64& rng) {
  const auto length = std::uniform_int_distribution<int>(3, 10)(rng);
  std::uniform_int_distribution<int> digit(0, 9);
  std::string s;
  for (int i = 0; i < length; ++i) s += static_cast<char>('0' + digit(rng));
  return s;
}

}  // namespace

Example generate_example(Task task, std::mt19937_64& rng) {
  switch (task) {
    case Task::Dates: {
      const int64_t first = days_from_civil({kFirstYear, 1, 1});
      const int64_t last = days_from_civil({kLastYear, 12, 31});
      const Date date = civil_from_days(std::uniform_int_distribution<int64_t>(first, last)(rng));
      return format_date(date, std::uniform_int_distribution<int>(0, num_date_formats() - 1)(rng));
    }
    case Task::Reverse: {
      Example e;
      e.source = random_digits(rng);
      e.target.assign(e.source.rbegin(), e.source.rend());
      return e;
    }
    case Task::Sort: {
      Example e;
      e.source = random_digits(rng);
      e.target = e.source;
      std::sort(e.target.begin(), e.target.end());
      return e;
    }
  }
  throw Error("generate_example: unknown task");
}

int64_t max_source_length(Task task) {
  if (task != Task::Dates) return 10;
  // A source's length is the sum of its pieces' lengths, and the longest
  // weekday (Wednesday), month (September) and two-digit days all meet in the
  // last two weeks of September 1979, which hold every weekday.
  size_t longest = 0;
  for (int day = 17; day <= 30; ++day)
    for (int format = 0; format < num_date_formats(); ++format)
      longest = std::max(longest, format_date({1979, 9, day}, format).source.size());
  return static_cast<int64_t>(longest);
}

// ISO dates ("1979-05-03") and the longest digit strings both have 10 characters.
int64_t max_target_length(Task) {
  return 10;
}

// ---- datasets --------------------------------------------------------------------
std::vector<int64_t> truncate_pad(std::vector<int64_t> line, int64_t num_steps, int64_t pad) {
  AG_CHECK(num_steps >= 0, "truncate_pad", "num_steps " + std::to_string(num_steps) + " < 0");
  line.resize(static_cast<size_t>(num_steps), pad);
  return line;
}

Dataset::Dataset(const DatasetOptions& options) : task_(options.task) {
  AG_CHECK(options.num_train > 0 && options.num_heldout >= 0, "Dataset",
           "need num_train > 0 and num_heldout >= 0, got " + std::to_string(options.num_train) +
               " and " + std::to_string(options.num_heldout));
  std::mt19937_64 rng(options.seed);
  // What must not repeat across the split: for dates the date itself (so no
  // held-out date appears in training in any format), else the source.
  const auto key = [this](const Example& e) { return task_ == Task::Dates ? e.target : e.source; };
  std::set<std::string> heldout_keys;
  while (static_cast<int64_t>(heldout_.size()) < options.num_heldout) {
    Example e = generate_example(task_, rng);
    if (heldout_keys.insert(key(e)).second) heldout_.push_back(std::move(e));
  }
  train_.reserve(static_cast<size_t>(options.num_train));
  while (static_cast<int64_t>(train_.size()) < options.num_train) {
    Example e = generate_example(task_, rng);
    if (heldout_keys.count(key(e)) == 0) train_.push_back(std::move(e));
  }
  std::vector<std::vector<std::string>> sources, targets;
  for (const auto& e : train_) {
    sources.push_back(tokenize_chars(e.source));
    targets.push_back(tokenize_chars(e.target));
  }
  src_vocab_ = Vocab(sources);
  tgt_vocab_ = Vocab(targets);
  src_steps_ = max_source_length(task_) + 1;
  tgt_steps_ = max_target_length(task_) + 1;
}

namespace {

// Tokens + <eos>, truncated or padded to num_steps; the valid length counts
// the entries that are not <pad> (d2l's build_array_nmt).
void append_line(const std::string& text, const Vocab& vocab, int64_t num_steps,
                 std::vector<double>& array, std::vector<double>& valid_len) {
  std::vector<int64_t> line = vocab.char_indices(text);
  line.push_back(Vocab::kEos);
  int64_t valid = 0;
  for (int64_t index : truncate_pad(std::move(line), num_steps, Vocab::kPad)) {
    array.push_back(static_cast<double>(index));
    valid += index != Vocab::kPad;
  }
  valid_len.push_back(static_cast<double>(valid));
}

}  // namespace

Batch make_batch(const std::vector<const Example*>& examples, const Vocab& src_vocab,
                 const Vocab& tgt_vocab, int64_t src_steps, int64_t tgt_steps) {
  AG_CHECK(!examples.empty() && src_steps > 0 && tgt_steps > 0, "make_batch",
           "need examples and positive step counts, got " + std::to_string(examples.size()) +
               " examples, steps " + std::to_string(src_steps) + " and " +
               std::to_string(tgt_steps));
  std::vector<double> src, src_len, tgt, tgt_len;
  for (const Example* e : examples) {
    append_line(e->source, src_vocab, src_steps, src, src_len);
    append_line(e->target, tgt_vocab, tgt_steps, tgt, tgt_len);
  }
  const auto batch = static_cast<int64_t>(examples.size());
  return {ag::tensor(src, {batch, src_steps}, kInt64), ag::tensor(src_len, {batch}, kInt64),
          ag::tensor(tgt, {batch, tgt_steps}, kInt64), ag::tensor(tgt_len, {batch}, kInt64)};
}

std::pair<Tensor, Tensor> encode_sources(const std::vector<std::string>& texts,
                                         const Vocab& src_vocab, int64_t src_steps) {
  AG_CHECK(!texts.empty(), "translate", "no text to translate");
  std::vector<double> src, src_len;
  for (const auto& text : texts) {
    AG_CHECK(!text.empty(), "translate", "empty text");
    AG_CHECK(static_cast<int64_t>(text.size()) < src_steps, "translate",
             "\"" + text + "\" has " + std::to_string(text.size()) +
                 " characters; the model reads at most " + std::to_string(src_steps - 1));
    for (const auto& token : tokenize_chars(text)) {
      if (!src_vocab.contains(token)) {
        std::string known;
        for (int64_t i = 4; i < src_vocab.size(); ++i) known += src_vocab.token(i);
        std::sort(known.begin(), known.end());
        const auto c = static_cast<unsigned char>(token[0]);
        const std::string shown =
            std::isprint(c) ? "'" + token + "'" : "byte " + std::to_string(static_cast<int>(c));
        throw Error("translate: unknown character " + shown + " in \"" + text +
                    "\" (the model knows \"" + known + "\")");
      }
    }
    append_line(text, src_vocab, src_steps, src, src_len);
  }
  const auto batch = static_cast<int64_t>(texts.size());
  return {ag::tensor(src, {batch, src_steps}, kInt64), ag::tensor(src_len, {batch}, kInt64)};
}

BatchIterator::BatchIterator(const Dataset& data, int64_t batch_size, uint64_t seed)
    : data_(data), batch_size_(batch_size), rng_(seed), order_(data.train().size()) {
  AG_CHECK(batch_size > 0 && batch_size <= static_cast<int64_t>(data.train().size()),
           "BatchIterator",
           "batch size " + std::to_string(batch_size) + " must be in [1, " +
               std::to_string(data.train().size()) + "] (the training set's size)");
  std::iota(order_.begin(), order_.end(), 0);
  position_ = order_.size();  // shuffle before the first batch
}

Batch BatchIterator::next() {
  if (position_ + static_cast<size_t>(batch_size_) > order_.size()) {
    std::shuffle(order_.begin(), order_.end(), rng_);
    position_ = 0;
  }
  std::vector<const Example*> examples;
  examples.reserve(static_cast<size_t>(batch_size_));
  for (int64_t i = 0; i < batch_size_; ++i)
    examples.push_back(&data_.train()[static_cast<size_t>(order_[position_++])]);
  return make_batch(examples, data_.src_vocab(), data_.tgt_vocab(), data_.src_steps(),
                    data_.tgt_steps());
}

}  // namespace ag::translate
