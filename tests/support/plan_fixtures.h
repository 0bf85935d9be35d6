// Fixed HostFacts and a typical SandboxSpec for plan-level tests (golden plans, bwrap
// rendering): the same inputs give the same plans on any machine.
#pragma once

#include <gtest/gtest.h>

#include "runtime/host_facts.h"
#include "runtime/plan_compiler.h"
#include "runtime/spec.h"
#include "security/capabilities.h"

namespace sbx::runtime::fixtures {

// A root caller with every capability, in /work.
inline HostFacts RootHost() {
  HostFacts h;
  h.uid = h.gid = h.euid = 0;
  h.effective_caps = h.permitted_caps = security::AllCaps(40);
  h.cwd = "/work";
  return h;
}

// Uid/gid 1000 without capabilities, in its home.
inline HostFacts UserHost() {
  HostFacts h;
  h.uid = h.gid = h.euid = 1000;
  h.cwd = "/home/user";
  return h;
}

// The typical profile: /usr read-only, a /bin link, --proc, --dev, tmpfs /tmp,
// --unshare-all, --die-with-parent, --new-session, running `true`.
inline SandboxSpec TypicalSpec() {
  SandboxSpec spec;
  spec.unshare_user_try = spec.unshare_ipc = spec.unshare_pid = spec.unshare_net = true;
  spec.unshare_uts = spec.unshare_cgroup_try = true;
  spec.ops = {BindOp{.source = "/usr", .dest = "/usr", .read_only = true},
              SymlinkOp{.target = "usr/bin", .dest = "/bin"}, ProcOp{.dest = "/proc"},
              DevOp{.dest = "/dev"}, TmpfsOp{.dest = "/tmp"}};
  spec.env = {"HOME=/home/user", "PATH=/usr/bin", "PWD=/old"};
  spec.die_with_parent = spec.new_session = true;
  spec.command = {"true"};
  return spec;
}

// CompilePlan that must succeed: records a test failure and returns an empty Plan if not.
inline Plan Compile(const SandboxSpec& spec, const HostFacts& host) {
  auto plan = CompilePlan(spec, host);
  EXPECT_TRUE(plan) << plan.error().Render();
  return plan ? *plan : Plan{};
}

}  // namespace sbx::runtime::fixtures
