// Ratings as (user, item, rating) triples: read from MovieLens' u.data or any CSV/TSV of triples,
// or simulated with the shape of MovieLens 100k. Ids are the file's own integers; the model maps
// them to rows of its factor matrices.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

namespace pmf {

struct RatingTriples {
  std::vector<std::int64_t> user, item;
  std::vector<double> rating;
  std::vector<std::size_t> line;  // the file line of each triple (0 for simulated ones)
  std::size_t size() const { return rating.size(); }
  void push_back(std::int64_t u, std::int64_t i, double r, std::size_t at) {
    user.push_back(u);
    item.push_back(i);
    rating.push_back(r);
    line.push_back(at);
  }
};

/// The declared rating scale: ratings outside it are errors when read, and predictions are
/// clipped to it for the RMSE.
struct RatingRange {
  double min = 1.0, max = 5.0;
};

/// Reads `path` (plain or gzip; CRLF tolerated): one triple per line, `user item rating` then
/// anything (MovieLens' timestamp), fields separated by tabs, commas, semicolons or spaces. A first
/// line whose first field is not a number is a header and skipped. Ids are non-negative integers.
/// An empty line, a short row, a non-integer id or a rating that is not a number or lies outside
/// `range` throws, naming path:line. A path ending in `.npy` is `sgmcmc convert --ratings`'s binary
/// layout instead, rows × (user, item, rating), read by mapping it.
RatingTriples read_triples(const std::string& path, RatingRange range);

/// That .npy layout read without mapping it, for a data-parallel rank that keeps only its block of
/// the ratings (pmf_data.cpp): its rows (the header checked), and visit(i, user, item, rating) for
/// every row i in file order, each checked as read_triples checks it, read with pread a block at a
/// time so that the rank's memory holds none of the file's pages.
using TripleVisitor = std::function<void(std::size_t, std::int64_t, std::int64_t, double)>;
std::size_t triples_npy_rows(const std::string& path);
void for_each_triple_npy(const std::string& path, RatingRange range, const TripleVisitor& visit);

/// Writes `triples` as that .npy layout (float64), for `sgmcmc convert --ratings`.
void write_triples_npy(const RatingTriples& triples, const std::string& path);

/// The triples of the first `count` users in increasing id order (the paper's 100 … 943 users),
/// keeping file order. `ids` are those users' ids.
std::vector<std::int64_t> first_users(const RatingTriples& triples, std::size_t count);
RatingTriples keep_users(const RatingTriples& triples, const std::vector<std::int64_t>& ids);

/// What the simulation draws: MovieLens 100k's shape by default.
struct SimulationShape {
  std::size_t users = 943, items = 1682, ratings = 100'000;
  std::size_t minimum_per_user = 20;  // as MovieLens: every user rated at least 20 movies
  std::size_t rank = 5;               // of the planted factors
  double offset = 3.5;                // the planted mean rating
  double noise_sd = 0.5;
  bool round = true;                  // round to integers and clip to the range (MovieLens' 1 … 5)
  RatingRange range;
};

/// Simulated ratings (ids 1-based, as MovieLens'). Planted factors U*_i, V*_j ~ N(0, s² I_rank)
/// with s = rank^(-1/4), so U*_iᵀV*_j has variance 1; r = offset + U*_iᵀV*_j + noise_sd·z, then
/// (round) rounded and clipped to the range. Who rates what: every user gets `minimum_per_user`
/// ratings (an equal share when there are fewer than 20 per user), the rest go to users with
/// lognormal activity weights (σ = 1); items are chosen with lognormal popularity weights
/// (σ = 1.5), a long tail as in MovieLens; no pair is rated twice.
/// `Random` is sgmcmc::Rng (uniform on [0, 1), normal); the header needs no module.
template <class Random>
RatingTriples simulate_movielens_shape(const SimulationShape& shape, Random& rng);

// ---- implementation of the template --------------------------------------------------------------

namespace detail {
template <class Random>
std::vector<double> cumulative_lognormal_weights(std::size_t count, double sigma, Random& rng) {
  std::vector<double> cumulative(count);
  double total = 0.0;
  for (auto& c : cumulative) c = total += std::exp(sigma * rng.normal());
  return cumulative;
}
}  // namespace detail

template <class Random>
RatingTriples simulate_movielens_shape(const SimulationShape& shape, Random& rng) {
  const std::size_t r = shape.rank;
  const double scale = std::pow(static_cast<double>(r), -0.25);
  std::vector<double> u(shape.users * r), v(shape.items * r);
  for (double& x : u) x = scale * rng.normal();
  for (double& x : v) x = scale * rng.normal();
  const auto user_weights = detail::cumulative_lognormal_weights(shape.users, 1.0, rng);
  const auto item_weights = detail::cumulative_lognormal_weights(shape.items, 1.5, rng);

  RatingTriples triples;
  std::unordered_set<std::uint64_t> rated;
  std::vector<std::size_t> per_user(shape.users, 0);
  const auto add = [&](std::size_t user) {
    if (per_user[user] == shape.items) return;  // this user has rated everything: draw another
    ++per_user[user];
    for (;;) {  // rejection of pairs already rated: at MovieLens' density (6%) a few retries at most
      const std::size_t item = rng.index_from_cumulative(item_weights);
      if (!rated.insert(static_cast<std::uint64_t>(user) * shape.items + item).second) continue;
      double mean = shape.offset;
      for (std::size_t k = 0; k < r; ++k) mean += u[user * r + k] * v[item * r + k];
      double rating = mean + shape.noise_sd * rng.normal();
      if (shape.round) rating = std::clamp(std::round(rating), shape.range.min, shape.range.max);
      triples.push_back(static_cast<std::int64_t>(user + 1), static_cast<std::int64_t>(item + 1), rating, 0);
      return;
    }
  };
  // The caller keeps ratings ≤ users × items / 2, so the rejections below end quickly.
  for (std::size_t user = 0; user < shape.users; ++user)
    for (std::size_t k = 0; k < std::min({shape.minimum_per_user, shape.items, shape.ratings / shape.users}); ++k)
      add(user);
  while (triples.size() < shape.ratings) add(rng.index_from_cumulative(user_weights));
  return triples;
}

}  // namespace pmf
