// The object cache of --object-cache: its manifest and names, the checks before each use
// (a bad cache is moved aside, never used), the clone that borrows from it, its repack,
// `ls`'s list and `gc`'s removal. As root, the dispatch's user is the overflow uid and the cache
// root's.
#include "dispatch/git/object_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "base/safe_path.h"
#include "dispatch/git/object_cache_clone.h"
#include "dispatch/git/object_cache_manifest.h"
#include "dispatch/git/object_cache_repack.h"
#include "dispatch/git/source_stamp.h"
#include "tests/dispatch/scratch_dir.h"

namespace sbx::dispatch {
namespace {

constexpr uid_t kNobody = 65534;

int Sh(const std::string& script) { return std::system(("set -e; " + script).c_str()); }

std::string Output(const std::string& command) {
  std::string text;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) text.append(buf, n);
  ::pclose(pipe);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// $PATH with `dir` first while this lives (nothing when "").
class ScopedGitPath {
 public:
  explicit ScopedGitPath(const std::string& dir) {
    if (dir.empty()) return;
    const char* now = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): one thread
    saved_ = now != nullptr ? now : "/usr/bin:/bin";
    ::setenv("PATH", (dir + ":" + *saved_).c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  }
  ~ScopedGitPath() {
    if (saved_) ::setenv("PATH", saved_->c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  }
  ScopedGitPath(const ScopedGitPath&) = delete;
  ScopedGitPath& operator=(const ScopedGitPath&) = delete;

 private:
  std::optional<std::string> saved_;
};

RunAsIds Ids() {
  return ::geteuid() == 0 ? RunAsIds(runtime::SandboxSpec::HostIds{kNobody, kNobody}) : RunAsIds();
}

// A repository with two commits on main and a tag, readable by everybody; a cache root; a
// dispatch directory <id> in the layout `run` makes (0711, the caller's).
class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_ = dir_.Sub("repo");
    ASSERT_EQ(Sh("mkdir " + repo_ + " && cd " + repo_ +
                 " && git init -q -b main && echo one > f && git add f"
                 " && git -c user.name=t -c user.email=t@t commit -q -m one"
                 " && echo two > f && git -c user.name=t -c user.email=t@t commit -qam two"
                 " && git tag v1 && chmod -R a+rX ."),
              0);
    cache_root_ = dir_.Sub("caches");
  }

  // One dispatch's clone: <id>/workspace made like `run` makes it, then borrowed.
  base::Result<BorrowedStore> Clone(const std::string& id, std::vector<std::string>* notices) {
    std::string path = dir_.Sub(id);
    ::mkdir(path.c_str(), 0711);
    ::chmod(path.c_str(), 0711);
    dispatch_fd_ = base::UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ::mkdirat(dispatch_fd_.get(), "workspace", 0700);
    ws_fd_ = base::UniqueFd(::openat(dispatch_fd_.get(), "workspace", O_RDONLY | O_DIRECTORY));
    if (auto ids = Ids()) {
      if (::fchown(ws_fd_.get(), ids->uid, ids->gid) != 0) std::abort();
    }
    ScopedGitPath git_path(wrapped_ ? dir_.Sub("bin") : "");
    return CloneFromObjectCache(repo_, cache_root_, dispatch_fd_.get(), ws_fd_.get(), Ids(),
                                notices);
  }

  // From now on the dispatch's git is a wrapper that writes "UID ARGS..." for each run into
  // <dir>/marks/git.log and runs `body` (the real git's path in $GIT, its arguments in "$@").
  void WrapGit(const std::string& body = R"(exec "$GIT" "$@")") {
    const std::string real = Output("command -v git");
    ASSERT_EQ(Sh("mkdir -p " + dir_.Sub("bin") + " " + dir_.Sub("marks") + " && chmod 0777 " +
                 dir_.Sub("marks")),
              0);
    const std::string script =
        fmt::format("#!/bin/sh\necho \"$(id -u) $*\" >> {}\nGIT={}\n{}\n", GitLog(), real, body);
    ASSERT_EQ(Sh("cat > " + dir_.Sub("bin/git") + " <<'EOF'\n" + script + "EOF\nchmod 0755 " +
                 dir_.Sub("bin/git")),
              0);
    wrapped_ = true;
  }
  [[nodiscard]] std::string GitLog() const { return dir_.Sub("marks/git.log"); }

  // `count` commits to the source, each then cloned by a dispatch PREFIX<i>: the cache then
  // holds a pack per commit. The cache's path.
  std::string DispatchCommits(const std::string& prefix, int count) {
    std::vector<std::string> notices;
    std::string cache;
    for (int i = 0; i < count; ++i) {
      const std::string id = fmt::format("{}{}", prefix, i);
      EXPECT_EQ(Sh(fmt::format("cd {} && echo {} > f && git -c user.name=t -c user.email=t@t "
                               "commit -qam {} && chmod -R a+rX .",
                               repo_, id, id)),
                0);
      auto borrowed = Clone(id, &notices);
      EXPECT_TRUE(borrowed) << borrowed.error().Render();
      if (borrowed) cache = borrowed->cache;
    }
    EXPECT_TRUE(notices.empty()) << ::testing::PrintToString(notices);
    return cache;
  }

  // The runner a dispatch gives the repack: as root the overflow uid, in a fresh directory
  // of its own; as a normal user the caller, in place.
  RepackRunner Runner() {
    if (!Ids()) return {};
    return {
        .ids = Ids(), .make_scratch = [this]() -> base::Result<int> {
          std::string path = dir_.Sub(fmt::format("repack-{}", ++scratches_));
          if (::mkdir(path.c_str(), 0700) != 0 || ::chown(path.c_str(), kNobody, kNobody) != 0) {
            return base::ErrnoError("mkdir", path);
          }
          scratch_fd_ = base::UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
          return scratch_fd_.get();
        }};
  }

  std::string Git(const std::string& where, const std::string& args) {
    return Output("git -c safe.directory='*' -C " + where + " " + args + " 2>&1");
  }

  ScratchDir dir_;
  std::string repo_;
  std::string cache_root_;
  base::UniqueFd dispatch_fd_;
  base::UniqueFd ws_fd_;
  bool wrapped_ = false;
  int scratches_ = 0;
  base::UniqueFd scratch_fd_;
};

TEST(CacheManifestTest, RoundTripsAndRefusesWhatIsNotOne) {
  CacheManifest manifest{.source = "/src/a b", .files = {}};
  CachedFile file{.name = "pack-" + std::string(40, 'a') + ".pack", .size = 12, .mtime = {}};
  file.mtime.tv_sec = 1700000000;
  file.mtime.tv_nsec = 5;
  manifest.files.push_back(file);
  auto parsed = ParseCacheManifest(RenderCacheManifest(manifest));
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->source, "/src/a b");
  ASSERT_EQ(parsed->files.size(), 1U);
  EXPECT_EQ(parsed->files[0].size, 12);
  EXPECT_EQ(parsed->files[0].mtime.tv_nsec, 5);
  EXPECT_FALSE(ParseCacheManifest("something else\n"));
  EXPECT_FALSE(ParseCacheManifest("ateam-sandbox object cache 1\nsource /x\nfile ../x 1 2 3\n"));
}

TEST(CacheManifestTest, NamesAndIdsAreStrict) {
  EXPECT_TRUE(IsPackFileName("pack-" + std::string(40, '0') + ".idx"));
  EXPECT_TRUE(IsPackFileName("pack-" + std::string(64, 'f') + ".pack"));
  EXPECT_FALSE(IsPackFileName("pack-" + std::string(40, '0') + ".keep"));
  EXPECT_FALSE(IsPackFileName("pack-../../x.pack"));
  EXPECT_TRUE(IsCacheRefName("refs/heads/feature/one"));
  EXPECT_TRUE(IsCacheRefName("refs/tags/v1.0"));
  for (const char* bad : {"refs/remotes/origin/x", "refs/heads/../x", "refs/heads/a b",
                          "refs/heads/.hidden", "refs/heads/x.lock", "refs/heads/a\nb", "HEAD"}) {
    EXPECT_FALSE(IsCacheRefName(bad)) << bad;
  }
  EXPECT_TRUE(IsObjectId(std::string(40, 'a')));
  EXPECT_FALSE(IsObjectId(std::string(40, 'A')));
}

TEST_F(ObjectCacheTest, TheKeyIsTheSourcesInodeAndANonRepositoryIsOneLine) {
  auto key = CacheKeyOf(repo_);
  ASSERT_TRUE(key) << key.error().Render();
  struct stat st {};
  ASSERT_EQ(::stat(repo_.c_str(), &st), 0);
  EXPECT_EQ(key->name, fmt::format("{:x}-{}", st.st_dev, st.st_ino));
  // Renamed, it is the same repository, the same cache.
  ASSERT_EQ(::rename(repo_.c_str(), dir_.Sub("moved").c_str()), 0);
  EXPECT_EQ(CacheKeyOf(dir_.Sub("moved"))->name, key->name);
  ASSERT_EQ(::mkdir(dir_.Sub("plain").c_str(), 0755), 0);
  auto none = CacheKeyOf(dir_.Sub("plain"));
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().Render().find("not a local git repository"), std::string::npos);
  EXPECT_EQ(none.error().Render().find('\n'), std::string::npos);
}

TEST_F(ObjectCacheTest, TheWorkspaceBorrowsAndTheCacheIsTheCallersReadOnly) {
  std::vector<std::string> notices;
  auto borrowed = Clone("a1", &notices);
  ASSERT_TRUE(borrowed) << borrowed.error().Render();
  EXPECT_TRUE(notices.empty());
  std::string ws = dir_.Sub("a1/workspace");
  EXPECT_EQ(ReadWholeFile(ws + "/.git/objects/info/alternates"), borrowed->cache + "/objects\n");
  EXPECT_EQ(Git(ws, "log --format=%s"), "two\none");
  EXPECT_EQ(Git(ws, "tag"), "v1");
  EXPECT_EQ(Git(ws, "rev-parse --abbrev-ref HEAD"), "main");
  // The workspace's own store holds no object: they are all the cache's.
  EXPECT_EQ(Output("find " + ws + "/.git/objects -type f -path '*/pack/*' | wc -l"), "0");
  EXPECT_EQ(Git(borrowed->cache, "fsck --no-dangling"), "");
  // Every file the caller's, nothing writable by another uid (root's: readable by all).
  EXPECT_EQ(Output("find " + borrowed->cache + " ! -uid " + std::to_string(::geteuid()) +
                   " -o -perm /022 -o -type l"),
            "");
  // A second dispatch fetches nothing new and borrows the same cache.
  ASSERT_EQ(Sh("cd " + repo_ +
               " && echo three > f && git -c user.name=t -c user.email=t@t "
               "commit -qam three"),
            0);
  borrowed->lock.reset();
  auto second = Clone("a2", &notices);
  ASSERT_TRUE(second) << second.error().Render();
  EXPECT_EQ(second->cache, borrowed->cache);
  EXPECT_EQ(Git(dir_.Sub("a2/workspace"), "log -1 --format=%s"), "three");
  // The scratch repositories are gone.
  EXPECT_EQ(Output("ls " + dir_.Sub("a2")), "workspace");
}

// Nothing new in the source: the next dispatch fetches nothing and the cache's files stay
// as they were. Refs that moved without a new object (a branch reset back, a new tag on an
// old commit) are still something new.
TEST_F(ObjectCacheTest, NothingNewIsNotFetchedButMovedRefsAre) {
  std::vector<std::string> notices;
  auto first = Clone("f1", &notices);
  ASSERT_TRUE(first) << first.error().Render();
  first->lock.reset();
  struct stat before {};
  ASSERT_EQ(::stat((first->cache + "/packed-refs").c_str(), &before), 0);
  auto same = Clone("f2", &notices);
  ASSERT_TRUE(same) << same.error().Render();
  same->lock.reset();
  struct stat after {};
  ASSERT_EQ(::stat((first->cache + "/packed-refs").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "the cache's refs were written again";
  EXPECT_EQ(Git(dir_.Sub("f2/workspace"), "log -1 --format=%s"), "two");
  ASSERT_EQ(Sh("cd " + repo_ + " && git reset -q --hard HEAD~1 && git tag v0 HEAD"), 0);
  auto moved = Clone("f3", &notices);
  ASSERT_TRUE(moved) << moved.error().Render();
  std::string ws = dir_.Sub("f3/workspace");
  EXPECT_EQ(Git(ws, "log -1 --format=%s"), "one");
  EXPECT_EQ(Git(ws, "tag"), "v0\nv1");
  EXPECT_TRUE(notices.empty());
}

// A source left alone long enough to be stamped (source_stamp.h): the dispatch after the
// one that recorded its stamp lists no refs at all; a commit changes the stamp, and its
// refs are listed and fetched again.
TEST_F(ObjectCacheTest, AnUnchangedSourceIsKnownByItsStampWithoutGit) {
  WrapGit();
  // Waiting out the racy window, not measuring anything: until then no stamp is made.
  std::this_thread::sleep_for(std::chrono::seconds(kRacySeconds + 1));
  std::vector<std::string> notices;
  auto first = Clone("s1", &notices);
  ASSERT_TRUE(first) << first.error().Render();
  struct stat stamp {};
  EXPECT_EQ(::stat((first->cache + "/" + kCacheStampName).c_str(), &stamp), 0);
  first->lock.reset();
  ASSERT_EQ(Sh("rm " + GitLog()), 0);
  auto second = Clone("s2", &notices);
  ASSERT_TRUE(second) << second.error().Render();
  second->lock.reset();
  const std::string log = Output("cat " + GitLog() + " 2>/dev/null");
  EXPECT_EQ(log.find("ls-remote"), std::string::npos) << log;
  EXPECT_EQ(log.find("fetch"), std::string::npos) << log;
  EXPECT_EQ(Git(dir_.Sub("s2/workspace"), "log -1 --format=%s"), "two");
  ASSERT_EQ(Sh("cd " + repo_ +
               " && echo three > f && git -c user.name=t -c user.email=t@t commit -qam three"),
            0);
  auto third = Clone("s3", &notices);
  ASSERT_TRUE(third) << third.error().Render();
  EXPECT_EQ(Git(dir_.Sub("s3/workspace"), "log -1 --format=%s"), "three");
  EXPECT_TRUE(notices.empty()) << ::testing::PrintToString(notices);
}

// The workspace written from the cache's refs (borrowing_clone.h) is what git clone makes:
// a clean checkout, origin's branches and HEAD, the tags; a detached source stays detached.
TEST_F(ObjectCacheTest, TheWrittenCloneIsWhatGitCloneMakes) {
  std::vector<std::string> notices;
  ASSERT_EQ(Sh("cd " + repo_ + " && git branch feature/x HEAD~1"), 0);
  auto made = Clone("w1", &notices);
  ASSERT_TRUE(made) << made.error().Render();
  made->lock.reset();
  const std::string ws = dir_.Sub("w1/workspace");
  EXPECT_EQ(Git(ws, "status --porcelain"), "");
  EXPECT_EQ(Git(ws, "symbolic-ref HEAD"), "refs/heads/main");
  EXPECT_EQ(Git(ws, "symbolic-ref refs/remotes/origin/HEAD"), "refs/remotes/origin/main");
  EXPECT_EQ(Git(ws, "for-each-ref --format='%(refname)'"),
            "refs/heads/main\nrefs/remotes/origin/HEAD\nrefs/remotes/origin/feature/x\n"
            "refs/remotes/origin/main\nrefs/tags/v1");
  EXPECT_EQ(Git(ws, "fsck --no-progress --connectivity-only"), "");
  EXPECT_EQ(Output("cat " + ws + "/f"), "two");
  ASSERT_EQ(Sh("cd " + repo_ + " && git checkout -q --detach HEAD~1"), 0);
  auto detached = Clone("w2", &notices);
  ASSERT_TRUE(detached) << detached.error().Render();
  const std::string ws2 = dir_.Sub("w2/workspace");
  EXPECT_EQ(Git(ws2, "rev-parse HEAD"), Git(repo_, "rev-parse HEAD"));
  EXPECT_EQ(Output("cat " + ws2 + "/f"), "one");
  EXPECT_EQ(Git(ws2, "status --porcelain"), "");
  EXPECT_TRUE(notices.empty()) << ::testing::PrintToString(notices);
}

TEST_F(ObjectCacheTest, ACacheThatFailsItsCheckIsMadeAnew) {
  std::vector<std::string> notices;
  auto first = Clone("b1", &notices);
  ASSERT_TRUE(first) << first.error().Render();
  first->lock.reset();
  // A pack cut short: not what was copied in.
  ASSERT_EQ(Sh("cd " + first->cache +
               "/objects/pack && p=$(ls *.pack) && chmod u+w $p && "
               "truncate -s 100 $p"),
            0);
  auto second = Clone("b2", &notices);
  ASSERT_TRUE(second) << second.error().Render();
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_NE(notices[0].find("is not as it was copied in"), std::string::npos) << notices[0];
  EXPECT_EQ(Git(first->cache, "fsck --no-dangling"), "");
  second->lock.reset();
  // A symlink where a file was.
  notices.clear();
  ASSERT_EQ(Sh("cd " + first->cache + " && rm -f packed-refs && ln -s /etc/passwd packed-refs"), 0);
  auto third = Clone("b3", &notices);
  ASSERT_TRUE(third) << third.error().Render();
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_NE(notices[0].find("packed-refs is a symlink"), std::string::npos) << notices[0];
  struct stat st {};
  ASSERT_EQ(::lstat((first->cache + "/packed-refs").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST_F(ObjectCacheTest, ACacheFileOfAnotherUidIsNotTrusted) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a file to another uid";
  std::vector<std::string> notices;
  auto first = Clone("c1", &notices);
  ASSERT_TRUE(first) << first.error().Render();
  first->lock.reset();
  ASSERT_EQ(::chown((first->cache + "/HEAD").c_str(), kNobody, kNobody), 0);
  auto second = Clone("c2", &notices);
  ASSERT_TRUE(second) << second.error().Render();
  ASSERT_EQ(notices.size(), 1U);
  EXPECT_NE(notices[0].find("HEAD belongs to uid 65534"), std::string::npos) << notices[0];
  struct stat st {};
  ASSERT_EQ(::stat((first->cache + "/HEAD").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0U);
}

TEST_F(ObjectCacheTest, ACacheRootOfSomebodyElseIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a directory of another uid";
  ASSERT_EQ(::mkdir(cache_root_.c_str(), 0755), 0);
  ASSERT_EQ(::chown(cache_root_.c_str(), kNobody, kNobody), 0);
  std::vector<std::string> notices;
  auto refused = Clone("d1", &notices);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().Render().find("--object-cache"), std::string::npos)
      << refused.error().Render();
  EXPECT_EQ(refused.error().Render().find('\n'), std::string::npos);
}

// Every warm dispatch that fetches something new adds a pack; past kMaxCachePacks the
// cache is repacked into one, and nothing is dropped: a workspace that borrowed before the
// source was force-pushed (its commits then unreachable from the cache's refs) still
// passes fsck, and a clone from the repacked cache works. Every git step of the dispatches,
// the repack's included, ran as the dispatch's user: as root, the overflow uid wrote the
// pack (pack-objects) and root ran no git at all.
TEST_F(ObjectCacheTest, ACrowdedCacheIsRepackedByTheDispatchsUserAndKeepsEveryObject) {
  WrapGit();
  std::vector<std::string> notices;
  auto first = Clone("r0", &notices);
  ASSERT_TRUE(first) << first.error().Render();
  first->lock.reset();
  const std::string old_ws = dir_.Sub("r0/workspace");
  const std::string old_head = Git(old_ws, "rev-parse HEAD");
  const std::string commit = "git -c user.name=t -c user.email=t@t commit -q";
  ASSERT_EQ(Sh("cd " + repo_ + " && git tag -d v1 >/dev/null && git checkout -q --orphan new" +
               " && " + commit + " -m rewritten && git branch -q -M main && chmod -R a+rX ."),
            0);
  auto packs = [&] { return Output("ls " + first->cache + "/objects/pack | grep -c '\\.pack$'"); };
  for (size_t i = 1; i <= kMaxCachePacks; ++i) {
    ASSERT_EQ(Sh(fmt::format("cd {} && echo {} > f && {} -am c{} && chmod -R a+rX .", repo_, i,
                             commit, i)),
              0);
    auto borrowed = Clone(fmt::format("r{}", i), &notices);
    ASSERT_TRUE(borrowed) << borrowed.error().Render();
    if (i + 1 < kMaxCachePacks) {
      EXPECT_EQ(packs(), std::to_string(i + 1));
    }
  }
  EXPECT_EQ(packs(), "1");
  EXPECT_TRUE(notices.empty()) << ::testing::PrintToString(notices);
  const std::string user = std::to_string(Ids() ? kNobody : ::geteuid());
  const std::string log = Output("cat " + GitLog());
  EXPECT_EQ(Output("grep -vc '^" + user + " ' " + GitLog()), "0") << log;
  const char* repack_step = Ids() ? "pack-objects" : " repack ";
  EXPECT_EQ(Output("grep -c -- '" + std::string(repack_step) + "' " + GitLog()), "1") << log;
  EXPECT_EQ(Output("ls -A " + dir_.Sub(fmt::format("r{}", kMaxCachePacks))), "workspace")
      << "the repack's scratch was left";
  EXPECT_EQ(Git(first->cache, "for-each-ref --format='%(refname)'"), "refs/heads/main");
  EXPECT_EQ(Git(old_ws, "cat-file -t " + old_head), "commit");
  EXPECT_EQ(Git(old_ws, "fsck --no-dangling --no-progress"), "");
  EXPECT_EQ(Git(first->cache, "fsck --no-dangling --no-progress"), "");
  // The repacked cache passes its checks (no notice) and a clone from it works.
  auto after = Clone("after", &notices);
  ASSERT_TRUE(after) << after.error().Render();
  EXPECT_TRUE(notices.empty()) << ::testing::PrintToString(notices);
  EXPECT_EQ(Git(dir_.Sub("after/workspace"), "log --format=%s -1"),
            fmt::format("c{}", kMaxCachePacks));
}

// A stop signal waiting when the repack starts ends git at once: the cache is settled (it
// passes its checks, every object still there) and a later repack folds its packs.
TEST_F(ObjectCacheTest, AStopDuringTheRepackLeavesASoundCache) {
  const std::string cache = DispatchCommits("s", 3);
  ASSERT_FALSE(HasFailure());
  auto packs = [&] { return Output("ls " + cache + "/objects/pack | grep -c '\\.pack$'"); };
  ASSERT_EQ(packs(), "3");
  auto root = OpenCacheRoot(cache_root_, ::geteuid() == 0);
  ASSERT_TRUE(root) << root.error().Render();
  const std::string name = cache.substr(cache.rfind('/') + 1);
  const std::string source = CacheKeyOf(repo_)->source;
  // SIGUSR2 blocked and pending: the signalfd has it before git starts.
  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &usr2, nullptr), 0);
  base::UniqueFd stop(::signalfd(-1, &usr2, SFD_CLOEXEC | SFD_NONBLOCK));
  ASSERT_TRUE(stop);
  ASSERT_EQ(::raise(SIGUSR2), 0);
  auto stopped = RepackCacheIfCrowded(*root, name, source, stop.get(), Runner(), 1);
  ASSERT_EQ(::sigprocmask(SIG_UNBLOCK, &usr2, nullptr), 0);
  ASSERT_TRUE(stopped) << stopped.error().Render();
  EXPECT_EQ(stopped->stopped_by, SIGUSR2);
  EXPECT_FALSE(stopped->repacked);
  auto fd = base::OpenBeneath(root->fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  ASSERT_TRUE(fd);
  EXPECT_EQ(CacheProblemAt(fd->get(), root->shared, ::geteuid()), std::nullopt);
  EXPECT_EQ(Git(cache, "fsck --no-dangling --no-progress"), "");
  auto folded = RepackCacheIfCrowded(*root, name, source, -1, Runner(), 1);
  ASSERT_TRUE(folded) << folded.error().Render();
  EXPECT_TRUE(folded->repacked);
  EXPECT_EQ(packs(), "1");
  EXPECT_EQ(CacheProblemAt(fd->get(), root->shared, ::geteuid()), std::nullopt);
  EXPECT_EQ(Git(dir_.Sub("s0/workspace"), "fsck --no-dangling --no-progress"), "");
}

// Root checks the pack the dispatch's user wrote before any old pack goes: one that lacks an
// object of the cache (here a git that drops the first of them) is refused, and the cache
// keeps its packs, passes its checks and still lends every object.
TEST_F(ObjectCacheTest, ARepackedPackThatLacksAnObjectIsRefused) {
  if (!Ids()) GTEST_SKIP() << "needs root: a normal user's cache is repacked in place by git";
  const std::string cache = DispatchCommits("d", 2);
  ASSERT_FALSE(HasFailure());
  auto packs = [&] { return Output("ls " + cache + "/objects/pack | grep -c '\\.pack$'"); };
  ASSERT_EQ(packs(), "2");
  WrapGit(
      R"(case "$*" in *pack-objects*) sed 1d | "$GIT" "$@"; exit $?;; esac
exec "$GIT" "$@")");
  auto root = OpenCacheRoot(cache_root_, true);
  ASSERT_TRUE(root) << root.error().Render();
  const std::string name = cache.substr(cache.rfind('/') + 1);
  base::Result<RepackOutcome> repacked = RepackOutcome{};
  {
    ScopedGitPath path(dir_.Sub("bin"));
    repacked = RepackCacheIfCrowded(*root, name, CacheKeyOf(repo_)->source, -1, Runner(), 1);
  }
  ASSERT_FALSE(repacked);
  EXPECT_NE(repacked.error().Render().find("the new pack lacks objects of pack-"),
            std::string::npos)
      << repacked.error().Render();
  EXPECT_EQ(Output("grep -c pack-objects " + GitLog()), "1");
  EXPECT_EQ(packs(), "2");
  auto fd = base::OpenBeneath(root->fd.get(), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
  ASSERT_TRUE(fd);
  EXPECT_EQ(CacheProblemAt(fd->get(), root->shared, ::geteuid()), std::nullopt);
  EXPECT_EQ(Git(dir_.Sub("d0/workspace"), "fsck --no-dangling --no-progress"), "");
}

TEST_F(ObjectCacheTest, LsSeesTheCacheAndGcLeavesOneInUse) {
  std::vector<std::string> notices;
  auto borrowed = Clone("e1", &notices);
  ASSERT_TRUE(borrowed) << borrowed.error().Render();
  auto root = OpenCacheRoot(cache_root_, ::geteuid() == 0);
  ASSERT_TRUE(root) << root.error().Render();
  auto listed = ListCaches(*root);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1U);
  EXPECT_EQ((*listed)[0].source, CacheKeyOf(repo_)->source);
  EXPECT_GT((*listed)[0].bytes, 0U);
  EXPECT_TRUE((*listed)[0].in_use);
  auto kept = RemoveCacheIfUnused(*root, (*listed)[0].name);
  ASSERT_TRUE(kept);
  EXPECT_FALSE(*kept);
  borrowed->lock.reset();
  auto removed = RemoveCacheIfUnused(*root, (*listed)[0].name);
  ASSERT_TRUE(removed);
  EXPECT_TRUE(*removed);
  EXPECT_TRUE(ListCaches(*root)->empty());
  EXPECT_FALSE(std::filesystem::exists(borrowed->cache));
}

}  // namespace
}  // namespace sbx::dispatch
