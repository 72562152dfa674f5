// pmf's data: the ratings read or simulated, split into training and test, indexed by dense rows
// of U and V; and the [model] keys the model is built from.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "normal_gamma.hpp"
#include "ratings.hpp"

import sgmcmc.sdk;

namespace pmf {

inline constexpr std::uint32_t cold = UINT32_MAX;  // a test user or item absent from training

/// One training rating: rows of U and V, and the centred rating r_ij - r̄. 16 bytes, so a batch
/// reads its triples in few cache lines.
struct Rating {
  std::uint32_t user, item;
  double centred;
};

/// One test rating; user or item is `cold` when it has no training rating.
struct TestRating {
  std::uint32_t user, item;
  double rating;
};

/// Everything a model is built from, read from [model].
struct Options {
  std::size_t rank = 20;
  std::uint64_t gibbs_every = 10;
  double noise_precision = 2.0;
  std::optional<GammaPrior> noise_prior;  // τ ~ Gamma, drawn by Gibbs steps; none: τ fixed
  bool biases = false;
  double init_sd = 0.1;
  NormalGammaPrior prior;
  RatingRange range;
};

/// The data after max_users and the split: training ratings by dense row, test ratings, and the
/// original ids of each row (for parameter names).
struct Prepared {
  std::vector<Rating> train;  // of this process's share (ModelContext::rows): every training rating in one process
  std::size_t all_train = 0;  // N, the training ratings of every share together
  std::vector<TestRating> test;
  std::vector<std::int64_t> user_ids, item_ids;
  double offset = 0.0;  // r̄
};

/// The ratings of model.data (or simulated with MovieLens' shape), after max_users and the split
/// (model.test_data, or test_size of them drawn from the data stream). With a share of the rows
/// (context.rows, run.data_parallel) `train` keeps only the share's block of the training ratings;
/// the dense rows of U and V and r̄ are those of every training rating, as in one process, since
/// every rating was read (the peak holds them all).
Prepared prepare(const sgmcmc::ModelContext& context, RatingRange range);

/// The keys of [model] the model is built from; refuses rating_min >= rating_max.
Options read_options(sgmcmc::SectionReader settings);

}  // namespace pmf
