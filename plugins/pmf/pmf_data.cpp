// pmf's data (pmf_data.hpp).
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <fmt/format.h>

#include "pmf_data.hpp"

import sgmcmc.sdk;

namespace pmf {
namespace {

using sgmcmc::Rng;
using sgmcmc::SectionReader;

/// Dense rows 0..n-1 for the distinct ids in `ids`, in increasing id order.
std::map<std::int64_t, std::uint32_t> dense_rows(const std::vector<std::int64_t>& ids, std::span<const std::size_t> rows) {
  std::map<std::int64_t, std::uint32_t> index;
  for (std::size_t r : rows) index.emplace(ids[r], 0);
  std::uint32_t next = 0;
  for (auto& [id, row] : index) row = next++;
  return index;
}

std::vector<std::int64_t> ids_of(const std::map<std::int64_t, std::uint32_t>& index) {
  std::vector<std::int64_t> ids;
  for (const auto& entry : index) ids.push_back(entry.first);
  return ids;
}

std::uint32_t row_or_cold(const std::map<std::int64_t, std::uint32_t>& index, std::int64_t id) {
  const auto found = index.find(id);
  return found == index.end() ? cold : found->second;
}

Prepared index_ratings(const RatingTriples& data, std::span<const std::size_t> train_rows, const RatingTriples& test_data,
                       std::span<const std::size_t> test_rows) {
  const auto users = dense_rows(data.user, train_rows), items = dense_rows(data.item, train_rows);
  Prepared prepared;
  prepared.user_ids = ids_of(users);
  prepared.item_ids = ids_of(items);
  for (std::size_t r : train_rows) prepared.offset += data.rating[r];
  prepared.offset /= static_cast<double>(train_rows.size());
  for (std::size_t r : train_rows)
    prepared.train.push_back({users.at(data.user[r]), items.at(data.item[r]), data.rating[r] - prepared.offset});
  for (std::size_t r : test_rows)
    prepared.test.push_back({row_or_cold(users, test_data.user[r]), row_or_cold(items, test_data.item[r]), test_data.rating[r]});
  return prepared;
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
  RatingTriples data, test_file;
  if (auto path = sgmcmc::file_setting(settings, "data")) {
    refuse_simulation_keys(settings);
    data = read_triples(*path, range);
  } else {
    data = simulate_movielens_shape(simulation_shape(settings, range), rng);
  }
  std::optional<std::vector<std::int64_t>> kept_users;
  if (settings.contains("max_users")) {
    kept_users = first_users(data, static_cast<std::size_t>(settings.integer_at_least("max_users", 0, 1)));
    data = keep_users(data, *kept_users);
  }

  std::vector<std::size_t> train_rows, test_rows;
  const bool separate_test = settings.optional_text("test_data").has_value();
  if (separate_test) {
    if (settings.contains("test_size"))
      throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two",
                                      settings.describe("test_size")));
    test_file = read_triples(*settings.optional_text("test_data"), range);
    if (kept_users) test_file = keep_users(test_file, *kept_users);
    train_rows = sgmcmc::index_range(data.size());
    test_rows = sgmcmc::index_range(test_file.size());
  } else {
    auto split = sgmcmc::split_rows(data.size(), sgmcmc::row_count(settings, "test_size", 0.1, data.size(), 0, data.size() - 1), rng);
    train_rows = std::move(split.rest);
    test_rows = std::move(split.chosen);
    std::sort(test_rows.begin(), test_rows.end());
  }
  Prepared prepared = index_ratings(data, train_rows, separate_test ? test_file : data, test_rows);
  prepared.all_train = prepared.train.size();
  if (!context.rows.whole()) {
    const auto block = sgmcmc::share_of(sgmcmc::index_range(prepared.all_train), context.rows);
    prepared.train = std::vector<Rating>(prepared.train.begin() + static_cast<std::ptrdiff_t>(block.front()),
                                         prepared.train.begin() + static_cast<std::ptrdiff_t>(block.back() + 1));
  }
  return prepared;
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
