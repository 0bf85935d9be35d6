#include "dispatch/plan/harvest_plan.h"

#include <sys/resource.h>

#include <string>

#include <fmt/format.h>

#include "dispatch/plan/layout.h"
#include "runtime/plan_compiler.h"
#include "security/seccomp.h"

namespace sbx::dispatch {
namespace {

// Git as the harvest runs it: the repository named outright (no discovery, so no layout
// the agent left decides which config is read), no system or global config, and every
// setting that can start a program overridden on the command line, where it wins over
// the repository's config. The one line on stdin is read first (into $base); every
// command after it reads /dev/null.
constexpr const char* kGitPrelude = R"sh(set -eu
base=
IFS= read -r base || :
exec </dev/null
export GIT_DIR="$PWD/.git" GIT_WORK_TREE="$PWD"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_PAGER=cat PAGER=cat
export GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 GIT_NO_REPLACE_OBJECTS=1 GIT_EDITOR=:
g() {
  git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c core.pager=cat \
      -c core.attributesFile=/dev/null -c safe.directory='*' -c diff.noprefix=false \
      -c diff.mnemonicPrefix=false -c diff.relative=false -c format.signature= \
      -c core.bigFileThreshold=1m -c core.packedGitLimit=256m -c core.packedGitWindowSize=32m \
      -c core.deltaBaseCacheLimit=64m -c pack.windowMemory=64m "$@"
}
# Git would block on a FIFO (or read a device) where it expects a file: only regular files
# and directories in the git directory, but for the hooks, which git never opens here
# (core.hooksPath), and which people often link. find looks at each entry, opens none.
if [ ! -d "$GIT_DIR" ] || [ -h "$GIT_DIR" ] ||
   [ -n "$(find "$GIT_DIR" \( -path "$GIT_DIR/hooks" -o -path "$GIT_DIR/modules/*/hooks" \) \
           -prune -o ! -type f ! -type d -print -quit)" ]; then
  exit 86  # kHarvestNotRegularExit
fi
tmp=$(mktemp -d)
# The repository's own index is never opened by git: a copy, when it is a regular file.
export GIT_INDEX_FILE="$tmp/index"
cp "$GIT_DIR/index" "$tmp/index" 2>/dev/null || :
# No filter driver the workspace's config names runs: each one's commands are emptied on
# git's command line (GIT_CONFIG_COUNT), which wins over the repository's config.
g config --name-only --get-regexp '^filter\.' >"$tmp/filters" 2>/dev/null || :
n=0
while IFS= read -r key; do
  case "$key" in
  *.clean | *.smudge | *.process)
    export "GIT_CONFIG_KEY_$n=$key" "GIT_CONFIG_VALUE_$n="
    n=$((n + 1))
    ;;
  *.required)
    export "GIT_CONFIG_KEY_$n=$key" "GIT_CONFIG_VALUE_$n=false"
    n=$((n + 1))
    ;;
  esac
done <"$tmp/filters"
export GIT_CONFIG_COUNT=$n
)sh";

// $base: the base commit ("" when the clone had none); $1: the author of the uncommitted
// part. That part is staged into a throwaway index with its new objects in a throwaway
// object directory (the repository's own stays read-only and untouched), then diffed
// against HEAD.
constexpr const char* kPatchScript = R"sh(
head=$(g rev-parse -q --verify 'HEAD^{commit}' || :)
if [ -n "$head" ] && [ "$head" != "$base" ]; then
  if [ -n "$base" ]; then range="$base..$head"; else range="--root $head"; fi
  # shellcheck disable=SC2086
  g format-patch --stdout --binary --full-index --no-ext-diff --no-textconv $range
fi
mkdir "$tmp/objects"
export GIT_OBJECT_DIRECTORY="$tmp/objects"
export GIT_ALTERNATE_OBJECT_DIRECTORIES="$GIT_DIR/objects"
g add --all
against=${head:-$(g hash-object -t tree /dev/null)}
if ! g diff --cached --quiet --no-ext-diff --no-textconv "$against"; then
  printf 'From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
  printf 'From: %s\nDate: %s\n' "$1" "$(date -R)"
  printf 'Subject: [PATCH] Uncommitted changes left in the workspace\n\n---\n'
  g diff --cached --stat --no-ext-diff --no-textconv "$against"
  printf '\n'
  g diff --cached --binary --full-index --no-ext-diff --no-textconv "$against"
  printf -- '-- \nateam-sandbox harvest\n\n'
fi
)sh";

constexpr const char* kBaseScript = R"sh(
g rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null || :
)sh";

// $base: the revision, from stdin (the prelude reads it), checked by the caller not to
// start with '-' (no option).
constexpr const char* kRevisionScript = R"sh(
g rev-parse -q --verify "$base^{commit}" 2>/dev/null || exit 87
)sh";

// The harvest sandbox for `script` with /bin/sh, within the harvest's bounds.
runtime::SandboxSpec HarvestSpec(const HarvestFacts& facts, const security::BpfProgram& seccomp,
                                 const std::string& script, const std::vector<std::string>& args,
                                 const std::vector<int>& cgroup_procs_fds) {
  runtime::SandboxSpec spec;
  spec.unshare_user = spec.unshare_ipc = spec.unshare_pid = spec.unshare_uts = true;
  spec.unshare_net = true;
  spec.unshare_cgroup_try = true;
  AddReadOnlySystem(spec);
  spec.ops.emplace_back(runtime::ProcOp{.dest = "/proc"});
  spec.ops.emplace_back(runtime::DevOp{.dest = "/dev"});
  spec.ops.emplace_back(runtime::TmpfsOp{.dest = "/tmp", .perms = 01777, .size = kHarvestTmpBytes});
  spec.ops.emplace_back(
      runtime::BindOp{.source = facts.workspace, .dest = facts.workspace, .read_only = true});
  for (const auto& store : facts.borrowed_stores) {
    spec.ops.emplace_back(runtime::BindOp{.source = store, .dest = store, .read_only = true});
  }
  spec.chdir = facts.workspace;
  spec.env = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "TMPDIR=/tmp"};
  spec.cap_changes = {{security::CapChange::Kind::kDrop, std::nullopt}};
  spec.seccomp_programs.push_back(seccomp);
  spec.new_session = spec.die_with_parent = true;
  spec.close_inherited_fds = true;
  spec.run_as = facts.run_as;
  // Git inflates a whole blob in memory to diff it: a small object the agent left can stand
  // for gigabytes of zeros. The address space bounds that; RLIMIT_FSIZE the patch itself.
  spec.self_limits.rlimits = {{.resource = RLIMIT_AS, .value = kHarvestMemory},
                              {.resource = RLIMIT_FSIZE, .value = kHarvestPatchBytes}};
  spec.cgroup_procs_fds = cgroup_procs_fds;
  spec.command = {"/bin/sh", "-c", std::string(kGitPrelude) + script, "ateam-harvest"};
  spec.command.insert(spec.command.end(), args.begin(), args.end());
  return spec;
}

base::Result<runtime::Plan> CompileHarvestRun(const runtime::SandboxSpec& spec,
                                              const runtime::HostFacts& host) {
  auto plan = runtime::CompilePlan(spec, host);
  if (!plan) return plan.error();
  // Its stdout is the patch (or the commit), never the caller's terminal: no console.
  plan->stdout_tty.reset();
  return std::move(*plan);
}

}  // namespace

base::Result<HarvestPlan> CompileHarvestPlan(const HarvestFacts& facts,
                                             const runtime::HostFacts& host) {
  auto seccomp = security::CompileDefaultSeccompPolicy();
  if (!seccomp) return seccomp.error();
  const std::string who = fmt::format("{} <{}>", kAgentGitName, kAgentGitEmail);
  HarvestPlan planned;
  auto base_read = CompileHarvestRun(HarvestSpec(facts, *seccomp, kBaseScript, {}, {}), host);
  if (!base_read) return base_read.error();
  planned.base_read = std::move(*base_read);
  auto patch = CompileHarvestRun(
      HarvestSpec(facts, *seccomp, kPatchScript, {who}, facts.patch_cgroup_procs_fds), host);
  if (!patch) return patch.error();
  planned.patch = std::move(*patch);
  return planned;
}

base::Result<runtime::Plan> CompileRevisionRead(const HarvestFacts& facts,
                                                const runtime::HostFacts& host) {
  auto seccomp = security::CompileDefaultSeccompPolicy();
  if (!seccomp) return seccomp.error();
  return CompileHarvestRun(HarvestSpec(facts, *seccomp, kRevisionScript, {}, {}), host);
}

}  // namespace sbx::dispatch
