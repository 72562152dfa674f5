// Fuzz target: the dense binary reader (plugins/regression/binary_rows.hpp, npy.hpp): any bytes as
// an .npy file. It must refuse them with an Error naming the file, or return rows that keep the
// reader's promises; and a row range must give exactly those rows of the whole read (the share a
// data-parallel rank maps, issue 45); the rows written as a .csr folder read back the same, whole
// and as a range.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>

#include "binary_rows.hpp"
#include "fuzz_input.hpp"

namespace {

void check(const regression::LabelledRows& rows) {
  fuzz::require(rows.x.size() == rows.y.size() * rows.features, "x is not rows × features");
  fuzz::require(rows.features >= 1, "a row without features");
  for (double v : rows.x) fuzz::require(std::isfinite(v), "a feature that is not finite");
  for (double v : rows.y) fuzz::require(std::isfinite(v), "a label that is not finite");
}

void check_range(const std::string& path, const regression::LabelledRows& all) {
  const std::size_t first = all.y.size() / 3, count = (all.y.size() + 1) / 2;
  const auto part = regression::read_npy_rows(path, 0, {first, count});
  const std::size_t expected = std::min(count, all.y.size() - first);
  fuzz::require(part.y.size() == expected && part.features == all.features, "a row range of another size");
  fuzz::require(std::equal(part.y.begin(), part.y.end(), all.y.begin() + static_cast<std::ptrdiff_t>(first)),
                "a row range's labels differ from the whole read's");
  fuzz::require(std::equal(part.x.begin(), part.x.end(), all.x.begin() + static_cast<std::ptrdiff_t>(first * all.features)),
                "a row range's features differ from the whole read's");
}

/// `folder`, read whole and as a row range, gives `all` and those rows of it, value for value.
void check_csr_folder(const std::string& folder, const regression::LabelledRows& all) {
  const auto whole = regression::read_csr_rows(folder, all.features);
  fuzz::require(whole.y == all.y && whole.x == all.x, "a .csr folder reads back other rows than were written");
  const std::size_t first = all.y.size() / 3, count = (all.y.size() + 1) / 2;
  const auto part = regression::read_csr_rows(folder, all.features, {first, count});
  fuzz::require(part.y.size() == std::min(count, all.y.size() - first), "a .csr row range of another size");
  fuzz::require(std::equal(part.x.begin(), part.x.end(), all.x.begin() + static_cast<std::ptrdiff_t>(first * all.features)),
                "a .csr row range's features differ from the whole read's");
}

/// The rows written as a .csr folder (binary_rows.hpp's writer) read back the same; a refusal of
/// that folder is a finding, not an accepted outcome: the rows were read, so they must be writable.
void check_csr_round_trip(const std::string& path, const regression::LabelledRows& all) {
  const std::string folder = path + ".csr";
  regression::write_binary_rows(all, regression::BinaryLayout::sparse_csr, folder, regression::npy::Dtype::float64);
  try {
    check_csr_folder(folder, all);
  } catch (const sgmcmc::Error& error) {
    fuzz::broken(std::string("a .csr folder written from rows that were read is refused: ") + error.what());
  }
  std::filesystem::remove_all(folder);  // as_file's clean-up removes files, not folders
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = fuzz::as_file(data, size, "input.npy");
  fuzz::read_or_refuse(path, [&] {
    const auto rows = regression::read_npy_rows(path, 0);
    check(rows);
    check_range(path, rows);
    check_csr_round_trip(path, rows);
  });
  return 0;
}
