// translate/data: Vocab, the generated tasks (dates parse back to the same
// date with the right weekday), d2l's padding, the disjoint split, batches.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <random>
#include <set>
#include <sstream>

#include "attograd/translate/data.h"
#include "attograd/translate/dates.h"
#include "attograd/translate/digits.h"
#include "attograd/translate/predict.h"
#include "attograd/translate/tasks.h"
#include "test_util.h"

namespace ag::translate {
namespace {

using ag::testing::throws_error;

TEST(TranslateVocab, ReservedFirstThenByFrequency) {
  const Vocab vocab({{"b", "a", "b"}, {"c", "b", "a"}});
  EXPECT_EQ(vocab.idx_to_token(),
            (std::vector<std::string>{"<pad>", "<bos>", "<eos>", "<unk>", "b", "a", "c"}));
  EXPECT_EQ(vocab.index("<pad>"), Vocab::kPad);
  EXPECT_EQ(vocab.index("<eos>"), Vocab::kEos);
  EXPECT_EQ(vocab.index("a"), 5);
  EXPECT_EQ(vocab.index("zzz"), Vocab::kUnk);
  EXPECT_EQ(vocab.token(6), "c");
  EXPECT_EQ(vocab.tokens(vocab.indices({"c", "a", "?"})),
            (std::vector<std::string>{"c", "a", "<unk>"}));
  EXPECT_TRUE(throws_error([&] { vocab.token(7); }, {"Vocab::token", "7"}));
  EXPECT_TRUE(throws_error([&] { vocab.token(-1); }, {"Vocab::token", "-1"}));
}

TEST(TranslateVocab, MinFreqDropsRareTokens) {
  const Vocab vocab({{"a", "a", "b"}}, /*min_freq=*/2);
  EXPECT_EQ(vocab.size(), 5);
  EXPECT_EQ(vocab.index("b"), Vocab::kUnk);
}

TEST(TranslateVocab, FromTokensRoundTripsAndChecks) {
  const Vocab vocab({{"x", "y", "y"}});
  const Vocab restored = Vocab::from_tokens(vocab.idx_to_token());
  EXPECT_EQ(restored.idx_to_token(), vocab.idx_to_token());
  EXPECT_EQ(restored.index("x"), vocab.index("x"));
  EXPECT_TRUE(throws_error(
      [] {
        Vocab::from_tokens({"a", "<bos>", "<eos>", "<unk>"});
      },
      {"Vocab::from_tokens", "<pad>"}));
  EXPECT_TRUE(throws_error(
      [] {
        Vocab::from_tokens({"<pad>", "<bos>", "<eos>", "<unk>", "a", "a"});
      },
      {"Vocab::from_tokens", "'a' appears twice"}));
}

TEST(TranslateVocab, CharacterTokens) {
  EXPECT_EQ(tokenize_chars("ab 1"), (std::vector<std::string>{"a", "b", " ", "1"}));
  EXPECT_EQ(detokenize_chars({"<bos>", "1", "9", "<eos>", "<pad>"}), "19");
}

// The byte table agrees with the string lookup for every byte, in a
// vocabulary built from a corpus and in one restored from its tokens (a
// multi-character token never matches a byte).
TEST(TranslateVocab, CharIndicesMatchIndicesOfCharTokens) {
  const Vocab built({tokenize_chars("a-z 09a"), {"ab", "<eos>"}});
  const Vocab restored = Vocab::from_tokens(built.idx_to_token());
  std::string every_byte;
  for (int byte = 0; byte < 256; ++byte) every_byte.push_back(static_cast<char>(byte));
  for (const Vocab* vocab : {&built, &restored}) {
    EXPECT_EQ(vocab->char_indices(every_byte), vocab->indices(tokenize_chars(every_byte)));
    EXPECT_EQ(vocab->char_indices("a0?"),
              (std::vector<int64_t>{vocab->index("a"), vocab->index("0"), Vocab::kUnk}));
    EXPECT_TRUE(vocab->char_indices("").empty());
  }
  EXPECT_EQ(Vocab().char_indices("a"), (std::vector<int64_t>{Vocab::kUnk}));
}

TEST(TranslateDates, CalendarMatchesStdChrono) {
  namespace ch = std::chrono;
  for (int64_t days = days_from_civil({kFirstYear, 1, 1});
       days <= days_from_civil({kLastYear, 12, 31}); days += 17) {
    const Date date = civil_from_days(days);
    const ch::year_month_day ymd{ch::sys_days{ch::days{days}}};
    ASSERT_EQ(date.year, static_cast<int>(ymd.year()));
    ASSERT_EQ(date.month, static_cast<int>(static_cast<unsigned>(ymd.month())));
    ASSERT_EQ(date.day, static_cast<int>(static_cast<unsigned>(ymd.day())));
    ASSERT_EQ(weekday(date),
              static_cast<int>(ch::weekday{ch::sys_days{ch::days{days}}}.c_encoding()));
    ASSERT_EQ(days_from_civil(date), days);
  }
  EXPECT_EQ(weekday({1979, 5, 3}), 4);  // a Thursday
  EXPECT_EQ(iso_date({1979, 5, 3}), "1979-05-03");
}

// An independent reader of the formats: words are month or weekday names
// (full or three letters, any case), numbers with an ordinal suffix or an
// apostrophe are days or two-digit years; all-number dates are read by their
// separator ('/': month first unless the year is, '.': day first, '-': year first).
struct ParsedDate {
  Date date;
  int weekday = -1;  // -1 when the text names none
};
ParsedDate parse_date(const std::string& text) {
  static const char* months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                 "jul", "aug", "sep", "oct", "nov", "dec"};
  static const char* weekdays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
  ParsedDate parsed;
  int month = 0, day = 0, year = 0;
  std::vector<std::string> numbers;
  std::vector<char> separators;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c)) {
      std::string word;
      while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i])))
        word += static_cast<char>(std::tolower(static_cast<unsigned char>(text[i++])));
      if (word == "of" || word == "st" || word == "nd" || word == "rd" || word == "th") continue;
      bool known = false;
      for (int m = 0; m < 12; ++m)
        if (word.rfind(months[m], 0) == 0) month = m + 1, known = true;
      for (int w = 0; w < 7; ++w)
        if (word.rfind(weekdays[w], 0) == 0) parsed.weekday = w, known = true;
      EXPECT_TRUE(known) << word << " in " << text;
    } else if (std::isdigit(c)) {
      const bool apostrophe = i > 0 && text[i - 1] == '\'';
      std::string digits;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
        digits += text[i++];
      const bool has_ordinal =
          i + 1 < text.size() && std::isalpha(static_cast<unsigned char>(text[i]));
      if (apostrophe)
        year = std::stoi(digits) + (std::stoi(digits) >= 50 ? 1900 : 2000);
      else if (has_ordinal)
        day = std::stoi(digits);
      else
        numbers.push_back(digits);
    } else {
      if (c == '/' || c == '.' || c == '-') separators.push_back(static_cast<char>(c));
      ++i;
    }
  }
  const auto to_year = [](const std::string& s) {
    const int v = std::stoi(s);
    return s.size() == 4 ? v : v + (v >= 50 ? 1900 : 2000);
  };
  if (month != 0) {  // a named month: the numbers left are the day and the year
    for (const auto& n : numbers) {
      if (n.size() == 4 || (day != 0 && year == 0))
        year = to_year(n);
      else
        day = std::stoi(n);
    }
  } else {
    EXPECT_EQ(numbers.size(), 3u) << text;
    if (numbers.size() != 3 || separators.empty()) return parsed;
    std::vector<int> order;  // positions of year, month, day
    if (numbers[0].size() == 4)
      order = {0, 1, 2};
    else if (separators[0] == '/')
      order = {2, 0, 1};
    else
      order = {2, 1, 0};
    year = to_year(numbers[static_cast<size_t>(order[0])]);
    month = std::stoi(numbers[static_cast<size_t>(order[1])]);
    day = std::stoi(numbers[static_cast<size_t>(order[2])]);
  }
  parsed.date = {year, month, day};
  return parsed;
}

TEST(TranslateDates, EveryFormatParsesBackWithTheRightWeekday) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> pick(days_from_civil({kFirstYear, 1, 1}),
                                              days_from_civil({kLastYear, 12, 31}));
  std::set<std::string> distinct_sources;
  for (int trial = 0; trial < 100; ++trial) {
    const Date date = civil_from_days(pick(rng));
    for (int format = 0; format < num_date_formats(); ++format) {
      const Example e = format_date(date, format);
      distinct_sources.insert(e.source);
      const ParsedDate parsed = parse_date(e.source);
      ASSERT_EQ(parsed.date, date) << "format " << format << ": " << e.source;
      if (parsed.weekday >= 0) {
        ASSERT_EQ(parsed.weekday, weekday(date)) << e.source;
      }
      ASSERT_EQ(e.target, iso_date(date));
      ASSERT_LT(static_cast<int64_t>(e.source.size()), max_date_source_length() + 1);
      // One span per field, in field order, spelling the field's value.
      ASSERT_EQ(e.spans.size(), 3u) << e.source;
      for (size_t f = 0; f < 3; ++f) {
        ASSERT_EQ(static_cast<size_t>(e.spans[f].field), f);
        const std::string spelled =
            e.source.substr(static_cast<size_t>(e.spans[f].begin),
                            static_cast<size_t>(e.spans[f].end - e.spans[f].begin));
        ASSERT_FALSE(spelled.empty()) << e.source;
        if (f == 0) {
          EXPECT_EQ(std::stoi(spelled) % 100, date.year % 100) << e.source;
        } else if (f == 1 && std::isalpha(static_cast<unsigned char>(spelled[0]))) {
          EXPECT_EQ(parse_date("1 " + spelled + " 1979").date.month, date.month) << e.source;
        } else if (f == 1) {
          EXPECT_EQ(std::stoi(spelled), date.month) << e.source;
        } else {
          EXPECT_EQ(std::stoi(spelled.substr(0, spelled.find_first_not_of("0123456789"))), date.day)
              << e.source;
        }
      }
    }
  }
  EXPECT_GT(distinct_sources.size(), 1400u);
  EXPECT_EQ(format_date({1979, 5, 3}, 1).source, "Thursday, May 3, 1979");
  EXPECT_EQ(format_date({1979, 5, 3}, 4).source, "May 3rd '79");
  EXPECT_TRUE(throws_error([] { format_date({1979, 2, 30}, 0); }, {"format_date", "1979-2-30"}));
  EXPECT_TRUE(throws_error([] { format_date({1979, 2, 3}, 99); }, {"format_date", "99"}));
}

TEST(TranslateTasks, ReverseAndSortDigits) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 200; ++i) {
    const Example r = random_digits_example(DigitOrder::Reversed, rng);
    ASSERT_GE(r.source.size(), 3u);
    ASSERT_LE(r.source.size(), 10u);
    ASSERT_EQ(std::string(r.source.rbegin(), r.source.rend()), r.target);
    const Example s = random_digits_example(DigitOrder::Sorted, rng);
    ASSERT_TRUE(std::is_sorted(s.target.begin(), s.target.end()));
    ASSERT_TRUE(std::is_permutation(s.source.begin(), s.source.end(), s.target.begin()));
  }
}

TEST(TranslateDataset, SplitIsDisjointAndSeeded) {
  for (const std::string task : {"dates", "reverse", "sort"}) {
    const Dataset data = make_dataset({task, 5000, 500, 11});
    ASSERT_EQ(data.train().size(), 5000u);
    ASSERT_EQ(data.heldout().size(), 500u);
    std::set<std::string> heldout_sources, heldout_targets;
    for (const auto& e : data.heldout()) {
      EXPECT_TRUE(heldout_sources.insert(e.source).second) << "repeated held-out " << e.source;
      heldout_targets.insert(e.target);
    }
    for (const auto& e : data.train()) {
      ASSERT_EQ(heldout_sources.count(e.source), 0u) << task << ": " << e.source;
      if (task == "dates") {
        ASSERT_EQ(heldout_targets.count(e.target), 0u) << e.target;
      }
    }
    const Dataset again = make_dataset({task, 5000, 500, 11});
    EXPECT_EQ(again.train()[4999].source, data.train()[4999].source);
    EXPECT_EQ(again.heldout()[0].source, data.heldout()[0].source);
    const Dataset other = make_dataset({task, 5000, 500, 12});
    EXPECT_NE(other.train()[0].source + other.train()[1].source,
              data.train()[0].source + data.train()[1].source);
  }
}

TEST(TranslateDataset, TruncatePadAndValidLengths) {
  EXPECT_EQ(truncate_pad({5, 6, 7}, 5, 0), (std::vector<int64_t>{5, 6, 7, 0, 0}));
  EXPECT_EQ(truncate_pad({5, 6, 7}, 2, 0), (std::vector<int64_t>{5, 6}));
  const Vocab vocab({{"1", "2", "3"}});
  Example short_one{"12", "3", {}, {}}, long_one{"123123", "321", {}, {}};
  const Batch batch = make_batch({&short_one, &long_one}, vocab, vocab, 4, 3);
  const auto i1 = static_cast<double>(vocab.index("1")), i2 = static_cast<double>(vocab.index("2")),
             i3 = static_cast<double>(vocab.index("3"));
  EXPECT_EQ(batch.src.shape(), (Shape{2, 4}));
  EXPECT_EQ(batch.src.dtype(), kInt64);
  EXPECT_EQ(batch.src.to_vector(), (std::vector<double>{i1, i2, 2, 0, i1, i2, i3, i1}));
  EXPECT_EQ(batch.src_valid_len.to_vector(), (std::vector<double>{3, 4}));
  EXPECT_EQ(batch.tgt.to_vector(), (std::vector<double>{i3, 2, 0, i3, i2, i1}));
  EXPECT_EQ(batch.tgt_valid_len.to_vector(), (std::vector<double>{2, 3}));
}

TEST(TranslateDataset, EncodeSourcesRejectsBadText) {
  const Dataset data = make_dataset({"reverse", 200, 10, 1});
  const auto [src, len] = encode_sources({"123", "9"}, data.src_vocab(), data.src_steps());
  EXPECT_EQ(src.shape(), (Shape{2, data.src_steps()}));
  EXPECT_EQ(len.to_vector(), (std::vector<double>{4, 2}));
  EXPECT_TRUE(throws_error([&] { encode_sources({"12a"}, data.src_vocab(), 11); },
                           {"unknown character 'a'", "12a", "0123456789"}));
  EXPECT_TRUE(throws_error([&] { encode_sources({""}, data.src_vocab(), 11); }, {"empty text"}));
  EXPECT_TRUE(throws_error([&] { encode_sources({"12345678901"}, data.src_vocab(), 11); },
                           {"12345678901", "11 characters", "at most 10"}));
  EXPECT_TRUE(throws_error([&] { encode_sources({"1\n"}, data.src_vocab(), 11); },
                           {"unknown character byte 10"}));
}

// A task whose sources are phonemes reads them as tokens: "N AY F" is three,
// an unknown one is named, and the length counts phonemes.
TEST(TranslateDataset, PhonemeSourcesAreTokens) {
  TaskData data;
  data.train = {{"N AY F", "knife", {}, {}}, {"B AA K S", "box", {}, {}}};
  data.max_source_length = 4;
  data.max_target_length = 5;
  const Dataset d({"sounds", Tokenization::Phonemes, Tokenization::Characters}, data);
  EXPECT_EQ(d.src_vocab().size(), 4 + 7);
  EXPECT_TRUE(d.src_vocab().contains("AY"));
  const auto [src, len] =
      encode_sources({"N  AY F", "AA"}, d.src_vocab(), d.src_steps(), Tokenization::Phonemes);
  EXPECT_EQ(len.to_vector(), (std::vector<double>{4, 2}));
  EXPECT_EQ(src.to_vector()[1], static_cast<double>(d.src_vocab().index("AY")));
  EXPECT_TRUE(throws_error(
      [&] { encode_sources({"N AY Q"}, d.src_vocab(), d.src_steps(), Tokenization::Phonemes); },
      {"unknown phoneme 'Q' in \"N AY Q\"", "AA AY B F K N S"}));
  EXPECT_TRUE(
      throws_error([&] { encode_sources({"N N N N N"}, d.src_vocab(), 5, Tokenization::Phonemes); },
                   {"5 phonemes; the model reads at most 4"}));
  const Batch b = make_batch({&d.train()[1]}, d.src_vocab(), d.tgt_vocab(), d.src_steps(),
                             d.tgt_steps(), d.task());
  EXPECT_EQ(b.src_valid_len.to_vector(), (std::vector<double>{5}));  // B AA K S <eos>
  EXPECT_EQ(b.tgt_valid_len.to_vector(), (std::vector<double>{4}));  // b o x <eos>
  EXPECT_EQ(alignment_columns("B AA", Tokenization::Phonemes),
            (std::vector<std::string>{"B", "AA", "<eos>"}));
}

TEST(TranslateDataset, ShuffledBatchesVisitEveryExamplePerEpoch) {
  const Dataset data = make_dataset({"sort", 100, 10, 5});
  BatchIterator batches(data, 10, 9);
  std::multiset<std::vector<double>> seen;
  for (int i = 0; i < 10; ++i) {
    const Batch b = batches.next();
    ASSERT_EQ(b.src.shape(), (Shape{10, data.src_steps()}));
    const auto v = b.src.to_vector();
    for (size_t r = 0; r < 10; ++r)
      seen.insert(std::vector<double>(v.begin() + static_cast<long>(r) * data.src_steps(),
                                      v.begin() + static_cast<long>(r + 1) * data.src_steps()));
  }
  std::multiset<std::vector<double>> all;
  for (const auto& e : data.train()) {
    Batch one =
        make_batch({&e}, data.src_vocab(), data.tgt_vocab(), data.src_steps(), data.tgt_steps());
    all.insert(one.src.to_vector());
  }
  EXPECT_EQ(seen, all);
  BatchIterator same(data, 10, 9), other(data, 10, 10);
  EXPECT_EQ(same.next().src.to_vector(), BatchIterator(data, 10, 9).next().src.to_vector());
  EXPECT_NE(other.next().src.to_vector(), BatchIterator(data, 10, 9).next().src.to_vector());
  EXPECT_TRUE(throws_error([&] { BatchIterator(data, 101, 0); }, {"BatchIterator", "101"}));
}

}  // namespace
}  // namespace ag::translate
