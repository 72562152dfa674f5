// Ctrl-C (SIGINT) and SIGTERM during `sgmcmc run`: the first asks every chain to stop after its
// current iteration with a checkpoint, so that the run can be resumed; a second one of the same
// signal ends the process at once, as it would without sgmcmc's handler.
#pragma once
#include <atomic>

/// Installs the handlers; from then on a SIGINT or SIGTERM sets stop_requested().
void catch_interruptions();
/// Restores the default actions once the chains are done: a later signal ends the process.
void stop_catching_interruptions();

/// Set by the handler. Chains poll it between iterations (a std::atomic<bool> that is lock-free,
/// so setting it is async-signal-safe).
const std::atomic<bool>& stop_requested();

/// The signal's name ("SIGINT", "SIGTERM"), or "" when none arrived.
const char* interruption_name();
