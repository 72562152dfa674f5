// Running the same work over many indices on a few threads: a sweep's cells, for validation
// and for their runs.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

/// Runs work(i) for i in [0, count) on `jobs` threads; the first exception other than the
/// work's own handling is rethrown after every thread has stopped.
template <class Work>
void on_pool(std::size_t count, unsigned jobs, Work work) {
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < count;) {
      try {
        work(i);
      } catch (...) {
        const std::lock_guard lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = count;
      }
    }
  };
  {
    std::vector<std::jthread> pool;
    for (std::size_t t = 1; t < std::min<std::size_t>(jobs, count); ++t) pool.emplace_back(worker);  // no idle threads
    worker();
  }
  if (failure) std::rethrow_exception(failure);
}
