#include "dispatch/serve.h"

#include <sys/wait.h>

#include <chrono>
#include <csignal>

#include "base/exit_status.h"
#include "dispatch/record/exit_reason.h"
#include "dispatch/sys/stop_signals.h"

namespace sbx::dispatch {

using Clock = std::chrono::steady_clock;

LoopOutcome ServeUntilExit(relay::EventLoop& loop, const runtime::SandboxProcess& sandbox,
                           int signal_fd, const DispatchRequest& request,
                           const std::function<void()>& hang_up, DiskWatch* disk) {
  LoopOutcome outcome;
  int interrupts = 0;
  (void)loop.WatchCallback(sandbox.pidfd(), EPOLLIN, [&](uint32_t) { loop.Stop(); });
  auto kill_after_grace = [&] {
    loop.AddTimer(std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(request.grace_seconds)),
                  [&] {
                    outcome.killed = true;
                    sandbox.Signal(SIGKILL);
                  });
  };
  if (disk != nullptr) {
    (void)disk->Attach(loop, [&] {
      if (outcome.disk || outcome.timed_out) return;
      outcome.disk = true;
      sandbox.Signal(SIGTERM);
      kill_after_grace();
    });
  }
  (void)loop.WatchCallback(signal_fd, EPOLLIN, [&](uint32_t) {
    const int sig = TakeStopSignal(signal_fd);
    if (sig == 0) return;
    if (sig == SIGALRM) {  // the dispatch's deadline (ArmDispatchDeadline)
      outcome.timed_out = true;
      sandbox.Signal(SIGKILL);  // pid 1 of the sandbox: the kernel ends every process in it
      return;
    }
    // A terminal that went away may say so twice (the kernel's SIGHUP, the relay's own):
    // once is the hang-up, never the second interrupt that kills at once.
    if (sig == SIGHUP && hang_up && outcome.stop_signal == SIGHUP) return;
    if (++interrupts == 1) {
      outcome.stop_signal = sig;
      if (sig == SIGHUP && hang_up) {
        hang_up();
      } else {
        outcome.passed_on = sig == SIGHUP ? SIGTERM : sig;
        sandbox.Signal(outcome.passed_on);
      }
      kill_after_grace();
    } else {
      outcome.killed = true;
      sandbox.Signal(SIGKILL);
    }
  });
  (void)loop.Run();
  if (disk != nullptr) disk->Detach();  // its callback points at `outcome`
  return outcome;
}

void RecordExit(const siginfo_t& info, const LoopOutcome& loop, DispatchResult* result) {
  result->exit_code = base::ExitCodeFromSiginfo(info);
  result->signal = SignalOfExitCode(result->exit_code);
  result->reason = result->signal ? DispatchReason::kSignaled : DispatchReason::kExited;
  if (loop.stop_signal != 0) result->stop_signal = loop.stop_signal;
  // Died of the stop signal: killed by it, or the supervisor's report of the agent killed
  // by it or by the signal it was passed on as (SIGHUP goes on as SIGTERM).
  const bool ended_by_stop =
      loop.killed || result->exit_code == base::kSignalExitBase + loop.stop_signal ||
      (loop.passed_on != 0 && result->exit_code == base::kSignalExitBase + loop.passed_on);
  if (loop.timed_out) {
    result->reason = DispatchReason::kTimeout;
    result->exit_code = kTimeoutExit;
  } else if (loop.disk) {
    result->reason = DispatchReason::kDisk;
    result->exit_code = kDiskExit;
  } else if (loop.stop_signal != 0) {
    result->reason = DispatchReason::kInterrupted;
    if (ended_by_stop) {
      result->signal = loop.stop_signal;
      result->exit_code = base::kSignalExitBase + loop.stop_signal;
    }
  }
}

}  // namespace sbx::dispatch
