// A progress bar with rate and ETA on standard error, shown only on a terminal.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

class ProgressBar {
public:
  /// Draws nothing unless `enabled` and standard error is a terminal.
  ProgressBar(std::uint64_t total, const std::atomic<std::uint64_t>& done, bool enabled);
  ~ProgressBar();  // stops drawing and clears the line

private:
  void draw(double seconds) const;

  std::uint64_t total_;
  const std::atomic<std::uint64_t>& done_;
  std::mutex mutex_;
  std::condition_variable stop_signal_;
  bool stop_ = false;
  std::thread thread_;
};
