// The dates task: "Thursday, May 3, 1979", "05/03/79", "3.5.1979", ... ->
// "1979-05-03", every example drawn from a seeded RNG (no download). The
// characters that spell each field are kept (Example::spans), so that
// evaluation can say where the attention looked.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "attograd/translate/task.h"

namespace ag::translate {

// A calendar date; valid ones lie in [kFirstYear, kLastYear].
struct Date {
  int year = 1970, month = 1, day = 1;
  bool operator==(const Date&) const = default;
};
inline constexpr int kFirstYear = 1950, kLastYear = 2049;
// Days since 1970-01-01 and back (proleptic Gregorian calendar), and the
// weekday (0 = Sunday ... 6 = Saturday).
int64_t days_from_civil(const Date& date);
Date civil_from_days(int64_t days);
int weekday(const Date& date);
// "1979-05-03".
std::string iso_date(const Date& date);

// The date written in format `format` (0 <= format < num_date_formats()), with
// the spans of its year, month and day. Two-digit years stand for 1950..2049.
int num_date_formats();
Example format_date(const Date& date, int format);

// A uniform date of [kFirstYear, kLastYear] in a uniform format.
Example random_date_example(std::mt19937_64& rng);
// The longest source random_date_example can draw, in characters.
int64_t max_date_source_length();

// draw_split of random_date_example, disjoint by date (task.h).
TaskData dates_data(int64_t num_train, int64_t num_heldout, uint64_t seed);

}  // namespace ag::translate
