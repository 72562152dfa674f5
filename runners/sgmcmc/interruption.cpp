// SIGINT and SIGTERM during `sgmcmc run` (see interruption.hpp).
#include "interruption.hpp"

#include <atomic>
#include <csignal>
#include <unistd.h>

namespace {

std::atomic<bool> requested{false};
volatile std::sig_atomic_t received = 0;
static_assert(std::atomic<bool>::is_always_lock_free, "setting the flag in a signal handler must not take a lock");

/// Only async-signal-safe work here: set the flag and say so with write(2).
extern "C" void on_interruption(int signal) {
  received = signal;
  requested.store(true, std::memory_order_relaxed);
  constexpr char message[] = "\nsgmcmc: stopping after the current iteration, with a checkpoint (press again to stop at "
                             "once, losing what came after the last checkpoint)\n";
  [[maybe_unused]] const auto written = write(STDERR_FILENO, message, sizeof message - 1);
}

}  // namespace

void catch_interruptions() {
  struct sigaction action {};
  action.sa_handler = on_interruption;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the second signal takes the default action: the process ends
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void stop_catching_interruptions() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

const std::atomic<bool>& stop_requested() { return requested; }

const char* interruption_name() {
  switch (received) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "";
  }
}
