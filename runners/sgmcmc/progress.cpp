#include "progress.hpp"

#include <chrono>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <fmt/format.h>

ProgressBar::ProgressBar(std::uint64_t total, const std::atomic<std::uint64_t>& done, bool enabled)
    : total_(total), done_(done) {
  if (!enabled || !isatty(STDERR_FILENO)) return;
  thread_ = std::thread([this] {
    const auto start = std::chrono::steady_clock::now();
    std::unique_lock lock(mutex_);
    while (!stop_signal_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; }))
      draw(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  });
}

ProgressBar::~ProgressBar() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  stop_signal_.notify_one();
  thread_.join();
  std::fputs("\r\033[K", stderr);
}

void ProgressBar::draw(double seconds) const {
  constexpr int width = 30;
  const std::uint64_t done = done_.load(std::memory_order_relaxed);
  const double fraction = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1.0;
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0.0;
  const int filled = static_cast<int>(fraction * width);
  fmt::print(stderr, "\r[{}{}] {:3.0f}%  {:.3g} it/s  ETA {:.0f} s\033[K", std::string(filled, '#'),
             std::string(width - filled, ' '), 100 * fraction, rate, eta);
  std::fflush(stderr);
}
