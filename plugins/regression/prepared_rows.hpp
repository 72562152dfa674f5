// The rows a regression model is built from, chosen by its [model] settings: the data (a file,
// model.data, or simulated by the plugin), which of its rows train (model.subsample), and the
// test set (model.test_size rows of the data, or a separate file model.test_data). Shared by the
// `logistic` and `glm` plugins, which differ only in how they simulate data and code labels.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "design_matrix.hpp"
#include "labelled_rows.hpp"

import sgmcmc.sdk;

namespace regression {

struct Prepared {
  LabelledRows data, test_file;
  std::vector<std::size_t> train, test;  // rows of `data`, and of `test_file` or `data`
  std::size_t all_train = 0;  // N, the training rows of every share together (train.size() when whole)
  bool test_from_file = false;
  std::string test_file_name;  // what errors about test_file name: model.test_data, or the data's held-out rows
  StorageOptions storage;
  FileFormat format = FileFormat::automatic;  // model.format, which files to predict on are read with too
  std::vector<double> beta_star;  // θ* when the data were simulated from a prior draw
};

/// Data a plugin simulates when model.data is absent, and θ* when drawn from the prior.
struct Simulation {
  LabelledRows data;
  std::vector<double> beta_star;
};

/// Simulates the data: given model.features (0 if not set), model.simulate_from_prior, and the
/// data stream, which the split into train and test rows draws from next.
using Simulator = std::function<Simulation(std::size_t declared_features, bool from_prior, sgmcmc::Rng& rng)>;

/// Reads model.data, format, features, test_data, test_size, subsample, n, simulate_from_prior,
/// huge_pages and prefetch; `coding` maps the labels (as_read for counts and real responses).
/// The intercept column is the caller's to set in the returned storage options. With a share of
/// the rows (context.rows, run.data_parallel), `train` holds only the share's block of the
/// training rows (prepared_rows.cpp's keep_share says how each source is read).
Prepared prepare(const sgmcmc::ModelContext& context, LabelCoding coding, const Simulator& simulate);

/// A categorical family that counts its classes from every row's label (model.classes unset)
/// cannot on a rank of a data-parallel run that maps only its rows of a binary file: refused there,
/// naming model.data, before anything is read.
void refuse_counting_classes_of_a_share(const sgmcmc::ModelContext& context, bool classes_given);

}  // namespace regression
