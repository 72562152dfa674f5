// Reading a regression data set: one row per item, a label (the response) then the features, from
// LIBSVM sparse files or dense CSV, plain or gzip-compressed. Binary labels are mapped to
// y ∈ {-1, +1}; counts and real responses are kept as read (LabelCoding::as_read). Shared by the
// `logistic` and `glm` plugins, which both compile it.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace regression {

namespace npy {
class MappedArray;
}

/// Rows of (y, x) with y ∈ {-1, +1} (or as read) and x without the intercept, row-major.
struct LabelledRows {
  std::vector<double> y;
  std::vector<double> x;  // y.size() × features
  std::size_t features = 0;
  bool sparse = false;  // read from LIBSVM, where trailing zero features are simply absent
  std::vector<std::size_t> lines = {};  // each row's line in its file (empty for simulated rows), for errors
  std::vector<double> offset = {};      // o_i added to x_iᵀβ (glm's model.offset); empty: none
  /// Features left where they lie, in a memory-mapped .npy file (binary_rows.hpp), instead of `x`
  /// (then empty): row i's are columns 1.. of the map's row i, checked finite. copy_features reads
  /// either; materialise moves them into `x` for the code that edits rows.
  std::shared_ptr<const npy::MappedArray> mapped = {};
};

/// Row i's features into `out` (rows.features values) as Real: from `x`, or from the map, where a
/// float32 file's values reach float storage without a conversion.
template <class Real>
void copy_features(const LabelledRows& rows, std::size_t i, Real* out);

/// Moves features left in a map into `x` (nothing if there are none).
void materialise(LabelledRows& rows);

/// Moves the first feature column of `rows` into rows.offset (glm's model.offset); refuses, naming
/// `where`, rows with no feature column to take.
void take_offset_column(LabelledRows& rows, const std::string& where);

/// Pads every row with zero features up to `features` (a LIBSVM file narrower than another).
void widen(LabelledRows& rows, std::size_t features);

/// How the file's two label values map to -1 and +1; `as_read` keeps every label unmapped (a
/// count or a real response), and has no name in parse_label_coding.
enum class LabelCoding { automatic, zero_one, one_two, minus_plus, as_read };

/// Maps binary `labels` to -1/+1 by `coding` (automatic: told from the values present), refusing,
/// naming `path` and the row's line (`lines`, or empty: its index), a label outside the coding.
void map_labels(std::vector<double>& labels, const std::vector<std::size_t>& lines, LabelCoding coding,
                const std::string& path);

/// "auto", "0/1", "1/2", "-1/+1" → LabelCoding; anything else throws naming `where`.
LabelCoding parse_label_coding(const std::string& text, const std::string& where);

enum class FileFormat { automatic, libsvm, csv };
FileFormat parse_file_format(const std::string& text, const std::string& where);

/// Reads `path`. `declared_features` (0: none declared) bounds LIBSVM indices and fixes the
/// feature count; a CSV row must then have that many feature columns. Errors name file and line.
LabelledRows read_labelled_rows(const std::string& path, FileFormat format, LabelCoding coding,
                                std::size_t declared_features);

/// read_labelled_rows for a file too large to hold (`sgmcmc convert`): its rows, labels as read,
/// in blocks of about `block_values` values (at least one row), handed to `each` in file order,
/// with the same checks and errors (and no bound on the file's length: TextLines' `streamed`). A
/// LIBSVM file without `declared_features` is read twice, first for its width (the largest index),
/// or, when it is not a regular file (a pipe is read once), held whole; a binary file is one block
/// (it is mapped, not held). An error `each` throws reaches the caller as thrown. Returns the row
/// count.
std::size_t for_each_row_block(const std::string& path, FileFormat format, std::size_t declared_features,
                               std::size_t block_values, const std::function<void(const LabelledRows&)>& each);

/// "path:line" of row i of `rows` read from `path`, or "path: data row i+1" for simulated rows.
std::string row_place(const LabelledRows& rows, std::size_t i, const std::string& path);

/// Rows to predict on (`sgmcmc predict`), in the layout of a model's data of `features` features:
/// the label first (mapped by `coding`), or, in a CSV, the features alone (one column fewer;
/// `labelled` false, every y 0). Any other width is refused naming the file and both widths.
struct PredictionFile {
  LabelledRows rows;
  bool labelled = true;
};
PredictionFile read_prediction_file(const std::string& path, FileFormat format, LabelCoding coding,
                                    std::size_t features);

}  // namespace regression
