// The processes of an MPI job (`mpirun -n P sgmcmc sweep ...`), or this one process alone.
//
// Built with MPI (CMake option SGMCMC_WITH_MPI), a Cluster joins the job only when an MPI
// launcher started the process (it sets OMPI_COMM_WORLD_SIZE, PMI_SIZE or PMIX_RANK): a plain
// `sgmcmc sweep` does not pay OpenMPI's singleton start-up (about a second). Without MPI, or
// outside a launcher, it is rank 0 of 1 and every message call is trivial.
//
// Messages are byte strings. Only the thread that created the Cluster may call it (MPI is
// initialised with MPI_THREAD_FUNNELED: cells run on other threads, which never call MPI).
#pragma once
#include <cstddef>
#include <optional>
#include <string>

/// This process's rank as an MPI launcher announces it in the environment, before MPI starts
/// (0 outside a launcher): lets code that runs before a Cluster exists print once, not P times.
int launcher_rank();

class Cluster {
public:
  Cluster();
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool root() const { return rank_ == 0; }
  /// Ranks of this job on this machine (1 without MPI): they share its cores.
  int ranks_here() const { return ranks_here_; }

  /// An MPI launcher started this process and it joined the job (false without MPI).
  bool launched() const { return joined_; }
  /// This sgmcmc was built with MPI (SGMCMC_WITH_MPI).
  static bool built_with_mpi();

  /// all[r·count, (r+1)·count) ← rank r's `mine` (count doubles), on every rank: the collective
  /// of a data-parallel chain (data_parallel_run.hpp).
  void all_gather(const double* mine, std::size_t count, double* all) const;

  /// Root's `text` on every rank.
  std::string broadcast(const std::string& text) const;
  /// Sends `bytes` to rank 0 (blocks until it is on its way).
  void send_to_root(const std::string& bytes) const;
  /// On rank 0: a message some rank sent, with its sender, if one has arrived; never blocks
  /// waiting for one to arrive.
  std::optional<std::pair<int, std::string>> poll() const;
  /// Ends every rank of the job with `code`: for a failure after which ranks would wait on each
  /// other forever.
  [[noreturn]] void abort(int code) const;

private:
  int rank_ = 0;
  int size_ = 1;
  int ranks_here_ = 1;
  bool joined_ = false;  // MPI_Init was called here, so MPI_Finalize is due (with MPI)
};
