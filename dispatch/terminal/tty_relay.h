// TtyRelay: the bytes of an interactive session, on the dispatch's event loop, between the
// caller's terminal and the master of the agent's terminal (which lives in the sandbox's own
// devpts instance; `run` holds its only descriptor):
//
//   caller's stdin  --keys-->    master  ==pty==>  agent (slave: fds 0-2, controlling tty)
//   caller's stdout <--output--  master
//
// Each direction has one bounded buffer; a side that cannot take more is simply not read
// until it can, so a stopped terminal or agent slows the session down and never grows memory.
// How the session ends:
//  * the caller's terminal goes away (stdin reads EOF or fails, or stdout fails): HangUp(),
//    which closes the master, so the kernel hangs the terminal up and the agent's session
//    gets SIGHUP, as on a terminal window closed; then `caller_gone` is called;
//  * stdin that is not a terminal (a pipe) ends: one Ctrl-D (VEOF) is passed on after its
//    last byte, which a program reading lines takes as end of input;
//  * the agent's side is closed by every process of the sandbox: the master reads EIO and the
//    relay stops reading it. Drain(), after the sandbox ended, writes what the master still
//    holds, so the last output of the agent is never lost.
// Contract: single-threaded, on the loop's thread; the loop outlives the relay.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "base/error.h"
#include "base/unique_fd.h"
#include "relay/event_loop.h"

namespace sbx::dispatch {

// The caller's side of the session. Each fd is either owned (a private non-blocking reopen,
// terminal.h) or borrowed from the process (then used as it is: blocking writes).
struct CallerEnds {
  base::UniqueFd input_owned;
  int input = -1;  // -1: nothing to read
  bool input_is_terminal = false;
  base::UniqueFd output_owned;
  int output = -1;
  bool output_nonblocking = false;
};

class TtyRelay {
 public:
  TtyRelay(relay::EventLoop* loop, base::UniqueFd master, CallerEnds caller,
           std::function<void()> caller_gone);
  ~TtyRelay();
  TtyRelay(const TtyRelay&) = delete;
  TtyRelay& operator=(const TtyRelay&) = delete;

  base::Status Start();
  // Closes the master (the agent's session is hung up) and stops relaying.
  void HangUp();
  // After the sandbox ended: everything still buffered or readable from the master, to the
  // caller's output, waiting for it to take the bytes for a bounded time.
  void Drain();

  // -1 once hung up.
  [[nodiscard]] int master() const { return master_.get(); }

 private:
  class Watch;
  struct Buffer {
    std::vector<char> bytes;
    size_t begin = 0;
    size_t end = 0;
    [[nodiscard]] bool empty() const { return begin == end; }
    [[nodiscard]] size_t room() const { return bytes.size() - end; }
    char* space();  // compacts first when the tail is full
    void Consume(size_t n);
  };

  void OnInput();
  void OnMaster(uint32_t events);
  void OnOutput();
  void ReadInput();
  void InputEnded();
  void CallerGone();
  void ReadMaster();
  void FlushToAgent();
  void FlushToCaller();
  void UpdateInterest();

  relay::EventLoop* loop_;
  base::UniqueFd master_;
  CallerEnds caller_;
  std::function<void()> caller_gone_;
  Buffer to_agent_;
  Buffer to_caller_;
  bool input_open_ = true;
  bool input_pollable_ = true;  // false for a regular file or /dev/null: read when there is room
  bool master_readable_ = true;
  std::unique_ptr<Watch> input_watch_;
  std::unique_ptr<Watch> master_watch_;
  std::unique_ptr<Watch> output_watch_;
};

}  // namespace sbx::dispatch
