// pmf's data (pmf_data.hpp).
#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <fmt/format.h>

#include "pmf_data.hpp"
#include "../regression/npy.hpp"

import sgmcmc.sdk;

namespace pmf {
namespace {

using sgmcmc::Rng;
using sgmcmc::SectionReader;

using RowIndex = std::map<std::int64_t, std::uint32_t>;  // an id → its dense row

/// What indexes the training ratings, from every one of them: the dense rows 0..n-1 of U and V for
/// the distinct training ids in increasing id order, and r̄, their ratings summed in file order.
struct TrainingIndex {
  RowIndex users, items;
  double rating_sum = 0.0;
  std::size_t ratings = 0;
  void add(std::int64_t user, std::int64_t item, double rating) {
    users.emplace(user, 0);
    items.emplace(item, 0);
    rating_sum += rating;
    ++ratings;
  }
};

std::vector<std::int64_t> number_rows(RowIndex& index) {
  std::vector<std::int64_t> ids;
  for (auto& [id, row] : index) {
    row = static_cast<std::uint32_t>(ids.size());
    ids.push_back(id);
  }
  return ids;
}

std::uint32_t row_or_cold(const RowIndex& index, std::int64_t id) {
  const auto found = index.find(id);
  return found == index.end() ? cold : found->second;
}

/// The model's ratings by `index`: the rows `train_rows` of `train` (the share's block of the
/// training ratings, or all of them) and `test_rows` of `test`.
Prepared index_ratings(TrainingIndex index, const RatingTriples& train, std::span<const std::size_t> train_rows,
                       const RatingTriples& test, std::span<const std::size_t> test_rows) {
  Prepared prepared;
  prepared.user_ids = number_rows(index.users);
  prepared.item_ids = number_rows(index.items);
  prepared.all_train = index.ratings;
  prepared.offset = index.rating_sum / static_cast<double>(index.ratings);
  for (std::size_t r : train_rows)
    prepared.train.push_back({index.users.at(train.user[r]), index.items.at(train.item[r]), train.rating[r] - prepared.offset});
  for (std::size_t r : test_rows)
    prepared.test.push_back({row_or_cold(index.users, test.user[r]), row_or_cold(index.items, test.item[r]), test.rating[r]});
  return prepared;
}

/// A data-parallel rank's ratings from a .npy file (sgmcmc convert --ratings) streamed once with
/// pread: every training rating enters the index, as in one process, and only the share's block
/// of them and the held-out ratings (the sorted file rows `test_rows`) are kept, so the rank holds
/// none of the others' ratings, not even while reading.
Prepared stream_share(const std::string& path, RatingRange range, std::size_t rows, std::span<const std::size_t> test_rows,
                      const std::optional<RatingTriples>& test_file, sgmcmc::RowShare share) {
  const sgmcmc::ItemBlock block = sgmcmc::share_block(rows - test_rows.size(), share);
  TrainingIndex index;
  RatingTriples kept, held_out;
  std::size_t next_test = 0;
  for_each_triple_npy(path, range, [&](std::size_t i, std::int64_t user, std::int64_t item, double rating) {
    if (next_test < test_rows.size() && test_rows[next_test] == i) {
      held_out.push_back(user, item, rating, i + 1);
      ++next_test;
      return;
    }
    const std::size_t k = index.ratings;  // this rating's place among the training ones
    index.add(user, item, rating);
    if (block.holds(k)) kept.push_back(user, item, rating, i + 1);
  });
  const auto& test = test_file ? *test_file : held_out;
  return index_ratings(std::move(index), kept, sgmcmc::index_range(kept.size()), test, sgmcmc::index_range(test.size()));
}

SimulationShape simulation_shape(SectionReader settings, RatingRange range) {
  SimulationShape shape;
  shape.users = static_cast<std::size_t>(settings.integer_at_least("users", 943, 1));
  shape.items = static_cast<std::size_t>(settings.integer_at_least("items", 1682, 1));
  shape.ratings = static_cast<std::size_t>(settings.integer_at_least("ratings", 100'000, 2));
  shape.rank = static_cast<std::size_t>(settings.integer_at_least("true_rank", 5, 1));
  shape.offset = settings.number("true_offset", 3.5);
  shape.noise_sd = settings.number("true_noise_sd", 0.5);
  shape.round = settings.flag("round", true);
  shape.range = range;
  if (shape.noise_sd < 0.0) throw sgmcmc::Error(fmt::format("{}: must be ≥ 0", settings.describe("true_noise_sd")));
  if (2 * shape.ratings > shape.users * shape.items)
    throw sgmcmc::Error(fmt::format("{}: {} ratings need at least twice as many (user, item) pairs; {} users × {} items "
                                    "have {}",
                                    settings.describe("ratings"), shape.ratings, shape.users, shape.items,
                                    shape.users * shape.items));
  return shape;
}

void refuse_simulation_keys(SectionReader settings) {
  for (const char* key : {"users", "items", "ratings", "true_rank", "true_offset", "true_noise_sd", "round"})
    if (settings.contains(key))
      throw sgmcmc::Error(fmt::format("{}: sets the simulated data; with model.data the ratings come from the file",
                                      settings.describe(key)));
}

}  // namespace

Prepared prepare(const sgmcmc::ModelContext& context, RatingRange range) {
  SectionReader settings = context.settings;
  Rng rng(context.seed, sgmcmc::data_stream);
  RatingTriples data;
  std::optional<std::string> streamed;  // a .npy file a data-parallel rank streams instead of holding
  if (auto path = sgmcmc::file_setting(settings, "data")) {
    refuse_simulation_keys(settings);
    if (!context.rows.whole() && !settings.contains("max_users") &&
        regression::binary_layout(*path) == regression::BinaryLayout::dense_npy)
      streamed = *path;
    else
      data = read_triples(*path, range);
  } else {
    data = simulate_movielens_shape(simulation_shape(settings, range), rng);
  }
  std::optional<std::vector<std::int64_t>> kept_users;
  if (settings.contains("max_users")) {
    kept_users = first_users(data, static_cast<std::size_t>(settings.integer_at_least("max_users", 0, 1)));
    data = keep_users(data, *kept_users);
  }
  const std::size_t rows = streamed ? triples_npy_rows(*streamed) : data.size();

  std::vector<std::size_t> train_rows, test_rows;
  std::optional<RatingTriples> test_file;
  if (const auto test_path = settings.optional_text("test_data")) {
    if (settings.contains("test_size"))
      throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two",
                                      settings.describe("test_size")));
    test_file = read_triples(*test_path, range);
    if (kept_users) test_file = keep_users(*test_file, *kept_users);
    if (streamed) return stream_share(*streamed, range, rows, {}, test_file, context.rows);
    train_rows = sgmcmc::index_range(rows);
    test_rows = sgmcmc::index_range(test_file->size());
  } else {
    if (rows == 0) throw sgmcmc::Error(fmt::format("{}: no ratings in the file", streamed.value_or("model.data")));
    const std::size_t count = sgmcmc::row_count(settings, "test_size", 0.1, rows, 0, rows - 1);
    if (streamed) {  // the held-out rows alone, not a list of every row
      test_rows = sgmcmc::chosen_rows(rows, count, rng);
      std::sort(test_rows.begin(), test_rows.end());
      return stream_share(*streamed, range, rows, test_rows, test_file, context.rows);
    }
    auto split = sgmcmc::split_rows(rows, count, rng);
    train_rows = std::move(split.rest);
    test_rows = std::move(split.chosen);
    std::sort(test_rows.begin(), test_rows.end());
  }

  TrainingIndex index;
  for (std::size_t r : train_rows) index.add(data.user[r], data.item[r], data.rating[r]);
  std::vector<std::size_t> block;  // of a share's rows; one process keeps every training row
  if (!context.rows.whole()) block = sgmcmc::share_of(train_rows, context.rows);
  return index_ratings(std::move(index), data, context.rows.whole() ? train_rows : block, test_file ? *test_file : data,
                       test_rows);
}

Options read_options(SectionReader settings) {
  Options options;
  options.rank = static_cast<std::size_t>(settings.integer_at_least("rank", 20, 1));
  options.gibbs_every = static_cast<std::uint64_t>(settings.integer_at_least("gibbs_every", 10, 0));
  options.noise_precision = settings.positive_number("noise_precision", 2.0);
  if (settings.contains("noise_prior_shape") || settings.contains("noise_prior_rate"))
    options.noise_prior = GammaPrior{.shape = settings.positive_number("noise_prior_shape", 1.0),
                                     .rate = settings.positive_number("noise_prior_rate", 1.0)};
  options.biases = settings.flag("biases", false);
  options.init_sd = settings.positive_number("init_sd", 0.1);
  options.prior = {.mean = settings.number("prior_mean", 0.0),
                   .mean_weight = settings.positive_number("prior_mean_weight", 1.0),
                   .shape = settings.positive_number("prior_shape", 1.0),
                   .rate = settings.positive_number("prior_rate", 1.0)};
  options.range = {settings.number("rating_min", 1.0), settings.number("rating_max", 5.0)};
  if (!(options.range.min < options.range.max))
    throw sgmcmc::Error(fmt::format("{}: must be below model.rating_max = {}", settings.describe("rating_min"), options.range.max));
  return options;
}

}  // namespace pmf
