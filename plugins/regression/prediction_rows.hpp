// Rows of a file that a regression model (`logistic`, `glm`) predicts on for `sgmcmc predict`:
// read as the model's data are (labelled_rows.hpp's read_prediction_file), held as a design matrix
// like its training rows.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "design_matrix.hpp"
#include "labelled_rows.hpp"

import sgmcmc.sdk;

namespace regression {

template <class Real>
struct MatrixPredictionRows final : sgmcmc::PredictionRows {
  DesignMatrix<Real> x;  // y as read (binary labels mapped to ±1; 0 without labels)
};

/// The rows of `path` in the layout of `like` (its features and intercept, and an offset column
/// before the features when `like` has offsets). `responses` are the labels as the prediction
/// codes them: a binary label ±1 as 1/0 (`coding` not as_read), any other response as read.
template <class Real>
std::unique_ptr<MatrixPredictionRows<Real>> read_matrix_prediction_rows(const std::string& path, FileFormat format,
                                                                        LabelCoding coding, const DesignMatrix<Real>& like,
                                                                        StorageOptions storage) {
  const std::size_t features = like.columns() - like.first_feature();
  const bool offset = !like.offset.empty();
  storage.intercept = like.first_feature() == 1;
  PredictionFile file = read_prediction_file(path, format, coding, features + (offset ? 1 : 0));
  if (offset) take_offset_column(file.rows, path);
  auto rows = std::make_unique<MatrixPredictionRows<Real>>();
  rows->count = file.rows.y.size();
  rows->x = design_matrix<Real>(file.rows, sgmcmc::index_range(rows->count), storage);
  if (file.labelled)
    for (const double y : file.rows.y) rows->responses.push_back(coding == LabelCoding::as_read ? y : (y + 1.0) / 2.0);
  return rows;
}

/// z = xᵀβ (+ o_i) of row i of `x`.
template <class Real>
double linear_predictor(const DesignMatrix<Real>& x, std::size_t i, const double* beta) {
  const Real* row = x.row(i);
  double z = x.offset.empty() ? 0.0 : x.offset[i];
  for (std::size_t j = 0; j < x.columns(); ++j) z += static_cast<double>(row[j]) * beta[j];
  return z;
}

}  // namespace regression
