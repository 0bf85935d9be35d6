// Two dispatches of one repository at the same time. Both agents stop at barriers this test
// controls (files it writes into their out dirs), so each one probes while the other is
// alive: neither sees the other's workspace, out dir, processes, tunnel or relay sockets;
// each clone keeps only its own commit; the original repository, .git objects included,
// stays byte-identical although each agent tampers with its clone's object files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>

#include "integration/run/run_support.h"

namespace sbx::integration::run {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using Snapshot = std::map<std::string, std::string>;  // relative path -> type, mode, content

// Every entry below `root` (symlinks not followed), with enough to see any change.
Snapshot TakeSnapshot(const std::string& root) {
  Snapshot snap;
  namespace fs = std::filesystem;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    std::string path = entry.path().string();
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0) continue;
    std::string value = std::to_string(st.st_mode) + " nlink " + std::to_string(st.st_nlink);
    if (S_ISREG(st.st_mode)) value += " " + ReadFile(path).value_or("<unreadable>");
    if (S_ISLNK(st.st_mode)) value += " -> " + fs::read_symlink(entry.path()).string();
    snap[path.substr(root.size())] = value;
  }
  return snap;
}

// Runs `git ARGS` in `dir` with an identity; returns stdout.
std::string Git(const std::string& dir, const Args& args) {
  Args argv = {"git",           "-C", dir, "-c", "safe.directory=*", "-c", "user.name=t", "-c",
               "user.email=t@t"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunCommand(argv);
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  return r.out;
}

// Waits until `path` exists; false after `timeout`.
bool WaitForFile(const std::string& path, milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (access(path.c_str(), F_OK) != 0) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// Written whole, then renamed: the agent never sources half a file.
void WriteAtomically(const std::string& path, const std::string& text) {
  WriteFile(path + ".tmp", text);
  ASSERT_EQ(rename((path + ".tmp").c_str(), path.c_str()), 0);
}

// One of the two dispatches: its name, routes, out dir and what it reported.
struct Side {
  std::string name;  // "a" or "b"
  std::string marker;
  EchoServer server1, server2;
  TempDir out;
  std::string workspace;  // from its ready file
  std::string socket_id;  // "dev:inode" of its route-0 socket as seen inside (unmounted by then)
  std::string state_dir;  // found on the host: the directory its `run` process holds open
  std::string host(int n) const { return name + std::to_string(n) + ".concurrency.test"; }
  int port(int n) const { return (name == "a" ? 1000 : 2000) + n; }
  std::string Allow(int n) const {
    int upstream = n == 1 ? server1.port() : server2.port();
    return host(n) + ":" + std::to_string(port(n)) + "=127.0.0.1:" + std::to_string(upstream);
  }
};

// The agent: commits its change, tampers with the cloned objects (appends to each, then
// replaces it), reports where it is, then probes the other side (whose paths arrive in
// `go`) and waits for `finish`. Patterns looked for in command lines are bracketed so that
// this script's own command line (and grep's) does not match them.
constexpr char kAgentScript[] = R"sh(set -u
$p sleep $mark >/dev/null &
bg=$!
git="git -c user.name=t -c user.email=t@t"
echo "change $me" >> file.txt && echo $me > only-$me.txt || exit 3
$git add -A && $git commit -qm "commit $me" || exit 3
n=0
for f in $objects; do
  o=.git/objects/$f
  chmod 0666 $o && echo tampered >> $o && n=$((n+1))
  cp $o $o.new && echo x >> $o.new && mv -f $o.new $o && n=$((n+1))
done
echo "tampered: $n"
sock=$(stat -c %d:%i /run/ateam-tunnel/route-0.sock)
printf 'ws=%s\nsock=%s\n' "$(pwd)" "$sock" > $out/ready.tmp && mv $out/ready.tmp $out/ready
wait_for() {
  n=0
  while [ ! -e $out/$1 ]; do sleep 0.05; n=$((n+1)); [ $n -lt 1200 ] || exit 9; done
}
wait_for go
. $out/go
for k in ws out dir state sock; do
  eval v=\$other_$k
  echo "other_$k: $($p stat $v | head -1)"
done
echo "root_ls: $(ls -A $(dirname $(pwd)) | tr '\n' ' ')"
echo "dispatches_ls: $(ls -A $(dirname $(dirname $(pwd))) | tr '\n' ' ')"
echo "tunnel_ls: $(ls -A /run/ateam-tunnel | tr '\n' ' ')"
echo "pids: $(ls -d /proc/[0-9]* | wc -l)"
cmdlines() {
  for c in /proc/[0-9]*/cmdline; do tr '\0\n' '  ' < $c; echo; done 2>/dev/null
}
echo "own_procs: $(cmdlines | grep -c "^$p slee[p] $mark")"
echo "other_procs: $(cmdlines | grep -c -e "$other_mark" -e run_tes[t] -e ' run --backen[d]')"
$nc concurrent $host1 $port1 1 | sed 's/^/route1_/'
$nc concurrent $host2 $port2 1 | sed 's/^/route2_/'
$nc resolve $other_host1 | sed 's/^/other_name_/'
$nc connect 127.77.0.2 $other_port1 | sed 's/^/other_addr1_/'
$nc connect 127.77.0.3 $other_port2 | sed 's/^/other_addr2_/'
$nc connect 127.0.0.1 $other_upstream | sed 's/^/other_upstream_/'
touch $out/probed
wait_for finish
kill $bg
exit 0
)sh";

// The script with this side's values set in front of it.
std::string AgentScript(const Side& me, const std::string& objects) {
  return "out=" + me.out.path() + "; p=" + ProbeHostPath() + "; nc=" + NetClientPath() +
         "; me=" + me.name + "; mark=" + me.marker + "; objects='" + objects +
         "'\nhost1=" + me.host(1) + "; port1=" + std::to_string(me.port(1)) +
         "; host2=" + me.host(2) + "; port2=" + std::to_string(me.port(2)) + "\n" + kAgentScript;
}

// What `me` gets told about `other` once both are running (its marker as a bracketed
// pattern, see kAgentScript).
std::string GoFile(const Side& other) {
  std::string dir = other.workspace.substr(0, other.workspace.rfind('/'));
  return "other_ws=" + other.workspace + "\nother_out=" + other.out.path() + "\nother_dir=" + dir +
         "\nother_state=" + other.state_dir + "\nother_sock=" + other.state_dir +
         "/route-0.sock\nother_mark='slee[p] " + other.marker + "'\nother_host1=" + other.host(1) +
         "\nother_port1=" + std::to_string(other.port(1)) +
         "\nother_port2=" + std::to_string(other.port(2)) +
         "\nother_upstream=" + std::to_string(other.server1.port()) + "\n";
}

// The state directory (below `base`) whose route-0.sock is the inode the agent saw.
// The state directory `run` (pid) holds open: the agent no longer sees its route socket
// (the supervisor unmounts it after the handoff), so it is found from the host side.
std::string FindStateDir(const std::string& base, pid_t pid) {
  std::error_code ec;
  std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds, ec)) {
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (!ec && target.rfind(base + "/", 0) == 0 &&
        std::filesystem::exists(target + "/route-0.sock", ec)) {
      return target;
    }
  }
  return "";
}

class RunConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string missing = MissingPrerequisite({"sh", "git", "stat", "sleep"});
    if (!missing.empty()) GTEST_SKIP() << missing;
    Git(repo_.path(), {"init", "-q"});
    WriteFile(repo_.Sub("file.txt"), "original\n");
    Git(repo_.path(), {"add", "file.txt"});
    Git(repo_.path(), {"commit", "-q", "-m", "one"});
    RunResult objects = RunCommand(
        {"sh", "-c", "cd " + repo_.Sub(".git/objects") + " && find . -type f | grep -v pack"});
    objects_ = objects.out;
    for (char& c : objects_) c = c == '\n' ? ' ' : c;
    ASSERT_FALSE(Words(objects_).empty()) << Describe(objects);
    before_ = TakeSnapshot(repo_.path());
  }

  // Where this caller's relay sockets live (XDG_RUNTIME_DIR is ignored for root).
  std::string StateBase() const { return IsRoot() ? "/run/ateam-sandbox-0" : xdg_.path(); }
  RootTempDir root_;

  Process Start(const Side& side) {
    Args options = {"--repo",        repo_.path(), "--workspace-root", root_.path(), "--out",
                    side.out.path(), "--allow",    side.Allow(1),      "--allow",    side.Allow(2)};
    return Process::Start(RunArgv(options, {"/bin/sh", "-c", AgentScript(side, objects_)}),
                          WithEnv({"XDG_RUNTIME_DIR=" + xdg_.path()}));
  }

  // Reads the agent's ready file: its workspace, and its relay socket on the host.
  void ReadReady(Side& side, pid_t run_pid) {
    Report ready;
    for (const auto& line : Words(ReadFile(side.out.Sub("ready")).value_or(""))) {
      auto eq = line.find('=');
      if (eq != std::string::npos) ready[line.substr(0, eq)] = line.substr(eq + 1);
    }
    side.workspace = ready["ws"];
    side.socket_id = ready["sock"];
    side.state_dir = FindStateDir(StateBase(), run_pid);
  }

  TempDir repo_, xdg_;
  std::string objects_;
  Snapshot before_;
};

void ExpectIsolated(const Report& r, const Side& me, const std::string& who) {
  for (const char* key : {"other_ws", "other_out", "other_dir", "other_state", "other_sock"}) {
    EXPECT_EQ(Get(r, key), "stat: ENOENT") << who << ": " << key;
  }
  std::string id = me.workspace.substr(0, me.workspace.rfind('/'));
  id = id.substr(id.rfind('/') + 1);
  EXPECT_EQ(Get(r, "root_ls"), "workspace ") << who;
  EXPECT_EQ(Get(r, "dispatches_ls"), id + " ") << who << ": other dispatches visible";
  EXPECT_EQ(Get(r, "tunnel_ls"), "report.sock route-0.sock route-1.sock supervisor ") << who;
  EXPECT_EQ(Get(r, "own_procs"), "1") << who;
  EXPECT_EQ(Get(r, "other_procs"), "0") << who << ": host or other dispatch processes visible";
  EXPECT_LE(std::stoi(Get(r, "pids")), 8) << who << ": pids " << Get(r, "pids");
  EXPECT_EQ(Get(r, "route1_echoed"), "1") << who;
  EXPECT_EQ(Get(r, "route2_echoed"), "1") << who;
  EXPECT_NE(Get(r, "other_name_resolve"), "OK") << who;
  // Nothing listens there; Landlock (ABI >= 4) refuses the other side's ports even before.
  for (const char* key : {"other_addr1_connect", "other_addr2_connect"}) {
    const std::string v = Get(r, key);
    EXPECT_TRUE(v == "ECONNREFUSED" || v == "EACCES") << who << ": " << key << " " << v;
  }
  EXPECT_NE(Get(r, "other_upstream_connect"), "OK") << who << ": host loopback reachable";
  // Both objects of every cloned object file: appended to and replaced, inside the clone.
  EXPECT_EQ(Get(r, "tampered"), std::to_string(2 * 3)) << who;
}

// The clone holds its own commit and file, none of the other's, and its tampered objects.
void ExpectOwnClone(const Side& me, const Side& other, const std::string& objects) {
  EXPECT_EQ(ReadFile(me.workspace + "/file.txt").value_or(""),
            "original\nchange " + me.name + "\n");
  EXPECT_TRUE(ReadFile(me.workspace + "/only-" + me.name + ".txt").has_value());
  EXPECT_FALSE(ReadFile(me.workspace + "/only-" + other.name + ".txt").has_value());
  EXPECT_NE(Git(me.workspace, {"cat-file", "-p", "HEAD"}).find("commit " + me.name),
            std::string::npos);
  for (const auto& f : Words(objects)) {
    EXPECT_NE(ReadFile(me.workspace + "/.git/objects/" + f).value_or("").find("tampered\nx\n"),
              std::string::npos)
        << me.name << ": " << f << " not replaced inside the clone";
  }
}

TEST_F(RunConcurrencyTest, TwoDispatchesOfOneRepoStayApart) {
  ASSERT_EQ(Words(objects_).size(), 3u) << objects_;  // blob, tree, commit
  int base = 5000 + getpid() % 2000 * 2;
  Side a, b;
  a.name = "a";
  a.marker = std::to_string(base);
  b.name = "b";
  b.marker = std::to_string(base + 1);
  Process run_a = Start(a);
  Process run_b = Start(b);
  bool ready = WaitForFile(a.out.Sub("ready"), milliseconds(60000)) &&
               WaitForFile(b.out.Sub("ready"), milliseconds(60000));
  if (!ready) {
    RunResult ra = run_a.Wait(milliseconds(1000)), rb = run_b.Wait(milliseconds(1000));
    FAIL() << "agents never got ready\n" << Describe(ra) << Describe(rb);
  }
  ReadReady(a, run_a.pid());
  ReadReady(b, run_b.pid());
  ASSERT_FALSE(a.state_dir.empty()) << "no relay socket with inode " << a.socket_id;
  ASSERT_FALSE(b.state_dir.empty()) << "no relay socket with inode " << b.socket_id;
  ASSERT_NE(a.state_dir, b.state_dir);
  // Both sandboxes are up at this moment: the host sees both agents' marker processes.
  EXPECT_FALSE(ProcessesMatching(ProbeHostPath() + " sleep " + a.marker).empty());
  EXPECT_FALSE(ProcessesMatching(ProbeHostPath() + " sleep " + b.marker).empty());
  WriteAtomically(a.out.Sub("go"), GoFile(b));
  WriteAtomically(b.out.Sub("go"), GoFile(a));
  // Neither may finish before both have probed.
  EXPECT_TRUE(WaitForFile(a.out.Sub("probed"), milliseconds(60000)));
  EXPECT_TRUE(WaitForFile(b.out.Sub("probed"), milliseconds(60000)));
  WriteFile(a.out.Sub("finish"), "");
  WriteFile(b.out.Sub("finish"), "");
  RunResult ra = run_a.Wait(milliseconds(30000));
  RunResult rb = run_b.Wait(milliseconds(30000));
  ASSERT_EQ(ra.exit_code, 0) << Describe(ra);
  ASSERT_EQ(rb.exit_code, 0) << Describe(rb);
  ExpectIsolated(ParseReport(ra.out), a, "a\n" + Describe(ra));
  ExpectIsolated(ParseReport(rb.out), b, "b\n" + Describe(rb));
  // Each upstream saw exactly its own dispatch's one connection.
  for (const Side* s : {&a, &b}) {
    EXPECT_EQ(s->server1.accepted(), 1) << s->name;
    EXPECT_EQ(s->server2.accepted(), 1) << s->name;
  }
  ExpectOwnClone(a, b, objects_);
  ExpectOwnClone(b, a, objects_);
  Snapshot after = TakeSnapshot(repo_.path());
  EXPECT_EQ(after.size(), before_.size()) << "entries added to or removed from the original";
  for (const auto& [path, value] : before_) {
    EXPECT_EQ(after[path], value) << path << " of the original changed";
  }
  EXPECT_EQ(Words(Git(repo_.path(), {"rev-list", "--all"})).size(), 1u) << "original refs moved";
}

}  // namespace
}  // namespace sbx::integration::run
