// The dates task: a calendar without tables, fifteen ways to write a date,
// and the generated split (see dates.h).
#include "attograd/translate/dates.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "attograd/error.h"
#include "attograd/translate/tasks.h"

namespace ag::translate {

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
Example random_date_example(std::mt19937_64& rng) {
  const int64_t first = days_from_civil({kFirstYear, 1, 1});
  const int64_t last = days_from_civil({kLastYear, 12, 31});
  const Date date = civil_from_days(std::uniform_int_distribution<int64_t>(first, last)(rng));
  return format_date(date, std::uniform_int_distribution<int>(0, num_date_formats() - 1)(rng));
}

int64_t max_date_source_length() {
  // A source's length is the sum of its pieces' lengths, and the longest
  // weekday (Wednesday), month (September) and two-digit days all meet in the
  // last two weeks of September 1979, which hold every weekday.
  size_t longest = 0;
  for (int day = 17; day <= 30; ++day)
    for (int format = 0; format < num_date_formats(); ++format)
      longest = std::max(longest, format_date({1979, 9, day}, format).source.size());
  return static_cast<int64_t>(longest);
}

TaskData dates_data(int64_t num_train, int64_t num_heldout, uint64_t seed) {
  // The date must not repeat across the split, whatever its format.
  TaskData data = draw_split(
      random_date_example, [](const Example& e) { return e.target; }, num_train, num_heldout, seed);
  data.max_source_length = max_date_source_length();
  data.max_target_length = 10;  // "1979-05-03"
  return data;
}

// ---- the task's entry (tasks.h) ------------------------------------------------------
namespace {

// Which field the ISO target's character at `position` belongs to, or -1 for
// the dashes ("1979-05-03": 0..3 year, 5..6 month, 8..9 day).
int iso_field(int64_t position) {
  if (position < 4) return static_cast<int>(DateField::Year);
  if (position == 5 || position == 6) return static_cast<int>(DateField::Month);
  if (position == 8 || position == 9) return static_cast<int>(DateField::Day);
  return -1;
}

// The alignment figures: for each output digit of the year, month and day,
// the weight its alignment row puts on the source characters that spell that
// field (the example's spans), averaged over digits and examples; and per
// field.
std::vector<Figure> date_alignment_figures(const std::vector<Example>& examples,
                                           const std::vector<Translation>& translations) {
  double field_weight[3] = {0, 0, 0};
  int64_t field_count[3] = {0, 0, 0};
  for (size_t i = 0; i < translations.size(); ++i) {
    const Example& e = examples[i];
    const Translation& t = translations[i];
    if (e.spans.size() != 3) continue;
    const std::vector<double> weights = t.alignment.to_vector();
    const int64_t cols = t.alignment.size(1);
    const int64_t rows = std::min<int64_t>(t.alignment.size(0), 10);
    for (int64_t r = 0; r < rows; ++r) {
      const int field = iso_field(r);
      if (field < 0) continue;
      const FieldSpan& span = e.spans[static_cast<size_t>(field)];
      double on_span = 0;
      for (int64_t c = span.begin; c < std::min(span.end, cols); ++c)
        on_span += weights[static_cast<size_t>(r * cols + c)];
      field_weight[field] += on_span;
      ++field_count[field];
    }
  }
  const int64_t digits = field_count[0] + field_count[1] + field_count[2];
  if (digits == 0) return {};  // no model's alignment to read
  double per_field[3];
  for (int f = 0; f < 3; ++f)
    per_field[f] = field_count[f] > 0 ? field_weight[f] / field_count[f] : std::nan("");
  const double all = (field_weight[0] + field_weight[1] + field_weight[2]) / digits;
  char text[128];
  std::snprintf(text, sizeof text, "alignment on the field %.3f (year %.3f, month %.3f, day %.3f)",
                all, per_field[0], per_field[1], per_field[2]);
  return {{"alignment", text, all},
          {"alignment_year", "", per_field[0]},
          {"alignment_month", "", per_field[1]},
          {"alignment_day", "", per_field[2]}};
}

}  // namespace

Task dates_task() {
  Task task;
  task.format.name = "dates";
  task.summary = "dates: \"Thursday, May 3, 1979\" -> \"1979-05-03\" (15 formats)";
  task.data = [](const DatasetOptions& o) {
    return dates_data(o.num_train, o.num_heldout, o.seed);
  };
  task.defaults = [](const std::string& model) {
    // The steps at which seed 0's held-out exact match passed 99%
    // (docs/seq2seq.md, docs/transformer.md): read off the held-out split
    // itself, as a generated task has no dev split. Dates repeat anyway
    // (36,525 dates, 15 formats): 50,000 examples are enough.
    TaskDefaults d = d2l_task_defaults(model);
    d.steps = model == "transformer" ? 3000 : 1500;
    d.train_size = 50000;
    return d;
  };
  task.check = [](const TaskOptions& o) { check_generated_options("dates", o); };
  task.figures = [](const std::vector<Example>& examples,
                    const std::vector<Translation>& translations, const Evaluation& scored) {
    std::vector<Figure> figures = generated_figures(scored);
    for (Figure& f : date_alignment_figures(examples, translations))
      figures.push_back(std::move(f));
    return figures;
  };
  return task;
}

}  // namespace ag::translate
