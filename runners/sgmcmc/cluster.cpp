// Cluster on MPI when built with it (SGMCMC_WITH_MPI), else the one process alone.
#include "cluster.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

int launcher_rank() {
  // Open MPI's, MPICH's (and Slurm's PMI) and PMIx's names for the rank.
  for (const char* variable : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* value = std::getenv(variable)) return std::atoi(value);
  return 0;
}

#ifdef SGMCMC_WITH_MPI
#include <mpi.h>

namespace cluster_detail {

// A message is a header (its length) then the bytes in chunks: MPI counts are ints, a cell's
// files may pass 2 GiB.
constexpr int header_tag = 1;
constexpr int chunk_tag = 2;
constexpr std::size_t chunk_bytes = std::size_t{1} << 30;

bool started_by_launcher() {
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(variable)) return true;
  return false;
}

void send_chunks(const std::string& bytes, int destination) {
  for (std::size_t at = 0; at < bytes.size(); at += chunk_bytes) {
    const auto count = static_cast<int>(std::min(chunk_bytes, bytes.size() - at));
    MPI_Send(bytes.data() + at, count, MPI_BYTE, destination, chunk_tag, MPI_COMM_WORLD);
  }
}

std::string receive_chunks(std::uint64_t length, int source) {
  std::string bytes(length, '\0');
  for (std::size_t at = 0; at < bytes.size(); at += chunk_bytes) {
    const auto count = static_cast<int>(std::min(chunk_bytes, bytes.size() - at));
    MPI_Recv(bytes.data() + at, count, MPI_BYTE, source, chunk_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return bytes;
}

}  // namespace cluster_detail

Cluster::Cluster() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised || !cluster_detail::started_by_launcher()) return;
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  joined_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (provided < MPI_THREAD_FUNNELED) {
    if (root()) std::fprintf(stderr, "sgmcmc: error: this MPI library offers no MPI_THREAD_FUNNELED; cells run on threads\n");
    abort(2);
  }
  MPI_Comm here;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &here);
  MPI_Comm_size(here, &ranks_here_);
  MPI_Comm_free(&here);
}

Cluster::~Cluster() {
  if (joined_) MPI_Finalize();
}

std::string Cluster::broadcast(const std::string& text) const {
  if (size_ == 1) return text;
  std::uint64_t length = text.size();
  MPI_Bcast(&length, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  std::string bytes = root() ? text : std::string(length, '\0');
  for (std::size_t at = 0; at < bytes.size(); at += cluster_detail::chunk_bytes) {
    const auto count = static_cast<int>(std::min(cluster_detail::chunk_bytes, bytes.size() - at));
    MPI_Bcast(bytes.data() + at, count, MPI_BYTE, 0, MPI_COMM_WORLD);
  }
  return bytes;
}

void Cluster::send_to_root(const std::string& bytes) const {
  if (root()) throw std::logic_error("Cluster::send_to_root called on rank 0");
  std::uint64_t length = bytes.size();
  MPI_Send(&length, 1, MPI_UINT64_T, 0, cluster_detail::header_tag, MPI_COMM_WORLD);
  cluster_detail::send_chunks(bytes, 0);
}

std::optional<std::pair<int, std::string>> Cluster::poll() const {
  if (size_ == 1) return std::nullopt;
  int arrived = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, cluster_detail::header_tag, MPI_COMM_WORLD, &arrived, &status);
  if (!arrived) return std::nullopt;
  std::uint64_t length = 0;
  MPI_Recv(&length, 1, MPI_UINT64_T, status.MPI_SOURCE, cluster_detail::header_tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  // A sender's messages arrive in the order sent (MPI's non-overtaking rule), so its chunks follow.
  return std::pair{status.MPI_SOURCE, cluster_detail::receive_chunks(length, status.MPI_SOURCE)};
}

void Cluster::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  if (joined_) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

bool Cluster::built_with_mpi() { return true; }

void Cluster::all_gather(const double* mine, std::size_t count, double* all) const {
  if (size_ == 1) {
    std::copy(mine, mine + count, all);
    return;
  }
  // MPI counts are ints: 2^31 doubles (16 GiB per rank) is far beyond any vector a chain gathers.
  if (count > static_cast<std::size_t>(INT_MAX)) throw std::length_error("Cluster::all_gather: more than INT_MAX doubles");
  const int n = static_cast<int>(count);
  MPI_Allgather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
}

#else  // without MPI: rank 0 of 1

Cluster::Cluster() {
  // P copies of a one-process sweep would each run every cell into one folder: refuse instead.
  int launched = 1;
  for (const char* variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* value = std::getenv(variable)) launched = std::max(launched, std::atoi(value));
  if (launched == 1) return;
  if (launcher_rank() == 0)
    std::fprintf(stderr, "sgmcmc: error: an MPI launcher started %d copies of this sgmcmc, which was built without MPI; "
                         "build it with MPI (third_party/setup.sh installs OpenMPI) or run it without mpirun\n", launched);
  abort(2);
}

Cluster::~Cluster() = default;
bool Cluster::built_with_mpi() { return false; }
void Cluster::all_gather(const double* mine, std::size_t count, double* all) const { std::copy(mine, mine + count, all); }
std::string Cluster::broadcast(const std::string& text) const { return text; }
void Cluster::send_to_root(const std::string&) const { throw std::logic_error("Cluster::send_to_root without MPI"); }
std::optional<std::pair<int, std::string>> Cluster::poll() const { return std::nullopt; }
void Cluster::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  std::exit(code);
}

#endif
