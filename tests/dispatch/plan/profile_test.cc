// Golden plans of the sandbox `run` builds (BuildDispatchSpec + CompilePlan): the text
// PrintPlan gives is the dispatch profile, for a root caller (run-as ids) and an
// unprivileged one, with and without routes. A change to the profile shows up here as a
// diff of the whole plan.
#include <gtest/gtest.h>

#include "dispatch/plan/layout.h"
#include "runtime/plan_printer.h"
#include "tests/support/plan_fixtures.h"

namespace sbx::dispatch {
namespace {

DispatchRequest Request() {
  DispatchRequest request;
  request.workspace = "/work/ws";
  request.command = {"agent", "--task", "x"};
  return request;
}

DispatchHostPaths Paths(bool with_routes) {
  DispatchHostPaths paths;
  paths.workspace = "/work/ws";
  paths.out = "/work/out";
  paths.supervisor_binary = "/usr/bin/ateam-sandbox";
  paths.hosts_fd = 7;
  paths.host_env = {"HOME=/home/user", "TERM=xterm",          "SECRET=1", "LANG=C.UTF-8",
                    "TZ=Europe/Paris", "COLORTERM=truecolor", "USER=user"};
  paths.sandbox_user = "agentuser";
  paths.seccomp_program = std::vector<uint8_t>(8, 0);
  if (with_routes) {
    paths.route_sockets = {"/state/route-0.sock", "/state/route-1.sock"};
    paths.route_listen = {"127.77.0.2:443", "127.77.0.3:8443"};
  }
  auto env = BuildSandboxEnvironment(Request(), paths);
  EXPECT_TRUE(env) << env.error().Render();
  if (env) paths.env = *env;
  return paths;
}

std::string ProfileFor(const runtime::HostFacts& host, bool with_routes,
                       std::optional<runtime::SandboxSpec::HostIds> run_as) {
  auto spec = BuildDispatchSpec(Request(), Paths(with_routes));
  EXPECT_TRUE(spec) << spec.error().Render();
  if (!spec) return "";
  spec->run_as = run_as;
  return runtime::PrintPlan(runtime::fixtures::Compile(*spec, host));
}

TEST(DispatchProfileTest, GoldenUnprivilegedWithoutRoutes) {
  EXPECT_EQ(ProfileFor(runtime::fixtures::UserHost(), false, std::nullopt),
            "mode: unprivileged\n"
            "namespaces: user mnt pid ipc uts cgroup\n"
            "uid map: 0 1000 1\n"
            "gid map: 0 1000 1\n"
            "nested uid map: 1000 0 1\n"
            "nested gid map: 1000 0 1\n"
            "sandbox ids: 1000:1000\n"
            "op 0: bind /usr -> /usr (ro)\n"
            "op 1: symlink /bin -> usr/bin\n"
            "op 2: symlink /sbin -> usr/sbin\n"
            "op 3: symlink /lib -> usr/lib\n"
            "op 4: symlink /lib32 -> usr/lib32\n"
            "op 5: symlink /lib64 -> usr/lib64\n"
            "op 6: bind /libx32 -> /libx32 (ro,try)\n"
            "op 7: bind /etc -> /etc (ro)\n"
            "op 8: proc /proc\n"
            "op 9: dev /dev\n"
            "op 10: tmpfs /dev/shm mode=1777\n"
            "op 11: tmpfs /tmp mode=1777\n"
            "op 12: tmpfs /home/ateam-sandbox mode=0700\n"
            "op 13: tmpfs /run/ateam-tunnel mode=0755\n"
            "op 14: bind /usr/bin/ateam-sandbox -> /run/ateam-tunnel/supervisor (ro)\n"
            "op 15: bind-data fd 7 -> /etc/hosts (ro) mode=0644\n"
            "op 16: bind /work/ws -> /work/ws (rw)\n"
            "op 17: bind /work/out -> /work/out (rw)\n"
            "op 18: hostname ateam-sandbox\n"
            "caps: capabilities: bounding set keeps "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
            "caps: capabilities: permitted=effective=inheritable "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
            "caps: capabilities: ambient raise "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin before exec\n"
            "seccomp programs: 1\n"
            "no_new_privs: yes; new session: yes; die with parent: yes\n"
            "pid 1: the command\n"
            "cwd: /work/ws\n"
            "exec: /run/ateam-tunnel/supervisor argv: /run/ateam-tunnel/supervisor supervise -- "
            "agent --task x\n"
            "env: 14 variables\n");
}

TEST(DispatchProfileTest, GoldenUnprivilegedWithRoutes) {
  EXPECT_EQ(ProfileFor(runtime::fixtures::UserHost(), true, std::nullopt),
            "mode: unprivileged\n"
            "namespaces: user mnt pid ipc uts cgroup\n"
            "uid map: 0 1000 1\n"
            "gid map: 0 1000 1\n"
            "nested uid map: 1000 0 1\n"
            "nested gid map: 1000 0 1\n"
            "sandbox ids: 1000:1000\n"
            "op 0: bind /usr -> /usr (ro)\n"
            "op 1: symlink /bin -> usr/bin\n"
            "op 2: symlink /sbin -> usr/sbin\n"
            "op 3: symlink /lib -> usr/lib\n"
            "op 4: symlink /lib32 -> usr/lib32\n"
            "op 5: symlink /lib64 -> usr/lib64\n"
            "op 6: bind /libx32 -> /libx32 (ro,try)\n"
            "op 7: bind /etc -> /etc (ro)\n"
            "op 8: proc /proc\n"
            "op 9: dev /dev\n"
            "op 10: tmpfs /dev/shm mode=1777\n"
            "op 11: tmpfs /tmp mode=1777\n"
            "op 12: tmpfs /home/ateam-sandbox mode=0700\n"
            "op 13: tmpfs /run/ateam-tunnel mode=0755\n"
            "op 14: bind /usr/bin/ateam-sandbox -> /run/ateam-tunnel/supervisor (ro)\n"
            "op 15: bind /state/route-0.sock -> /run/ateam-tunnel/route-0.sock (ro)\n"
            "op 16: bind /state/route-1.sock -> /run/ateam-tunnel/route-1.sock (ro)\n"
            "op 17: bind-data fd 7 -> /etc/hosts (ro) mode=0644\n"
            "op 18: bind /work/ws -> /work/ws (rw)\n"
            "op 19: bind /work/out -> /work/out (rw)\n"
            "op 20: hostname ateam-sandbox\n"
            "caps: capabilities: bounding set keeps "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
            "caps: capabilities: permitted=effective=inheritable "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
            "caps: capabilities: ambient raise "
            "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin before exec\n"
            "seccomp programs: 1\n"
            "no_new_privs: yes; new session: yes; die with parent: yes\n"
            "pid 1: the command\n"
            "cwd: /work/ws\n"
            "exec: /run/ateam-tunnel/supervisor argv: /run/ateam-tunnel/supervisor supervise "
            "--route 127.77.0.2:443=/run/ateam-tunnel/route-0.sock --route "
            "127.77.0.3:8443=/run/ateam-tunnel/route-1.sock -- agent --task x\n"
            "env: 14 variables\n");
}

TEST(DispatchProfileTest, GoldenRootRunAsOverflowWithoutRoutes) {
  EXPECT_EQ(
      ProfileFor(runtime::fixtures::RootHost(), false, runtime::SandboxSpec::HostIds{65534, 65534}),
      "mode: root\n"
      "namespaces: user mnt pid ipc uts cgroup\n"
      "uid map: 65534 65534 1\n"
      "gid map: 65534 65534 1\n"
      "sandbox ids: 65534:65534\n"
      "op 0: bind /usr -> /usr (ro)\n"
      "op 1: symlink /bin -> usr/bin\n"
      "op 2: symlink /sbin -> usr/sbin\n"
      "op 3: symlink /lib -> usr/lib\n"
      "op 4: symlink /lib32 -> usr/lib32\n"
      "op 5: symlink /lib64 -> usr/lib64\n"
      "op 6: bind /libx32 -> /libx32 (ro,try)\n"
      "op 7: bind /etc -> /etc (ro)\n"
      "op 8: proc /proc\n"
      "op 9: dev /dev\n"
      "op 10: tmpfs /dev/shm mode=1777\n"
      "op 11: tmpfs /tmp mode=1777\n"
      "op 12: tmpfs /home/ateam-sandbox mode=0700\n"
      "op 13: tmpfs /run/ateam-tunnel mode=0755\n"
      "op 14: bind /usr/bin/ateam-sandbox -> /run/ateam-tunnel/supervisor (ro)\n"
      "op 15: bind-data fd 7 -> /etc/hosts (ro) mode=0644\n"
      "op 16: bind /work/ws -> /work/ws (rw)\n"
      "op 17: bind /work/out -> /work/out (rw)\n"
      "op 18: hostname ateam-sandbox\n"
      "caps: capabilities: bounding set keeps "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
      "caps: capabilities: permitted=effective=inheritable "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin (capset EPERM ignored: root "
      "caller)\n"
      "caps: capabilities: ambient raise "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin before exec\n"
      "seccomp programs: 1\n"
      "no_new_privs: yes; new session: yes; die with parent: yes\n"
      "pid 1: the command\n"
      "cwd: /work/ws\n"
      "exec: /run/ateam-tunnel/supervisor argv: /run/ateam-tunnel/supervisor supervise -- agent "
      "--task x\n"
      "env: 14 variables\n");
}

TEST(DispatchProfileTest, GoldenRootRunAsOverflowWithRoutes) {
  EXPECT_EQ(
      ProfileFor(runtime::fixtures::RootHost(), true, runtime::SandboxSpec::HostIds{65534, 65534}),
      "mode: root\n"
      "namespaces: user mnt pid ipc uts cgroup\n"
      "uid map: 65534 65534 1\n"
      "gid map: 65534 65534 1\n"
      "sandbox ids: 65534:65534\n"
      "op 0: bind /usr -> /usr (ro)\n"
      "op 1: symlink /bin -> usr/bin\n"
      "op 2: symlink /sbin -> usr/sbin\n"
      "op 3: symlink /lib -> usr/lib\n"
      "op 4: symlink /lib32 -> usr/lib32\n"
      "op 5: symlink /lib64 -> usr/lib64\n"
      "op 6: bind /libx32 -> /libx32 (ro,try)\n"
      "op 7: bind /etc -> /etc (ro)\n"
      "op 8: proc /proc\n"
      "op 9: dev /dev\n"
      "op 10: tmpfs /dev/shm mode=1777\n"
      "op 11: tmpfs /tmp mode=1777\n"
      "op 12: tmpfs /home/ateam-sandbox mode=0700\n"
      "op 13: tmpfs /run/ateam-tunnel mode=0755\n"
      "op 14: bind /usr/bin/ateam-sandbox -> /run/ateam-tunnel/supervisor (ro)\n"
      "op 15: bind /state/route-0.sock -> /run/ateam-tunnel/route-0.sock (ro)\n"
      "op 16: bind /state/route-1.sock -> /run/ateam-tunnel/route-1.sock (ro)\n"
      "op 17: bind-data fd 7 -> /etc/hosts (ro) mode=0644\n"
      "op 18: bind /work/ws -> /work/ws (rw)\n"
      "op 19: bind /work/out -> /work/out (rw)\n"
      "op 20: hostname ateam-sandbox\n"
      "caps: capabilities: bounding set keeps "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin\n"
      "caps: capabilities: permitted=effective=inheritable "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin (capset EPERM ignored: root "
      "caller)\n"
      "caps: capabilities: ambient raise "
      "cap_setpcap,cap_net_bind_service,cap_net_admin,cap_sys_admin before exec\n"
      "seccomp programs: 1\n"
      "no_new_privs: yes; new session: yes; die with parent: yes\n"
      "pid 1: the command\n"
      "cwd: /work/ws\n"
      "exec: /run/ateam-tunnel/supervisor argv: /run/ateam-tunnel/supervisor supervise --route "
      "127.77.0.2:443=/run/ateam-tunnel/route-0.sock --route "
      "127.77.0.3:8443=/run/ateam-tunnel/route-1.sock -- agent --task x\n"
      "env: 14 variables\n");
}

TEST(DispatchProfileTest, EnvironmentIsTheAllowlistOnly) {
  auto spec = BuildDispatchSpec(Request(), Paths(false));
  ASSERT_TRUE(spec) << spec.error().Render();
  EXPECT_EQ(
      spec->env,
      (std::vector<std::string>{
          "HOME=/home/ateam-sandbox", "PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8",
          "USER=agentuser", "LOGNAME=agentuser", "ATEAM_OUT=/work/out", "ATEAM_WORKSPACE=/work/ws",
          "GIT_AUTHOR_NAME=ateam agent", "GIT_AUTHOR_EMAIL=agent@ateam-sandbox.invalid",
          "GIT_COMMITTER_NAME=ateam agent", "GIT_COMMITTER_EMAIL=agent@ateam-sandbox.invalid",
          "TERM=xterm", "COLORTERM=truecolor", "TZ=Europe/Paris"}));
}

}  // namespace
}  // namespace sbx::dispatch
