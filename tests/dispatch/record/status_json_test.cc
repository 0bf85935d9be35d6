// The --status-json document: every field, hostile strings quoted, for each way a dispatch
// can end.
#include <gtest/gtest.h>

#include "dispatch/record/status_json.h"

namespace sbx::dispatch {
namespace {

DispatchResult Finished() {
  DispatchResult r;
  r.id = "20261201-abc";
  r.workspace = "/w/ws";
  r.out = "/w/out";
  r.routes = {{"api.example.com", 443, "127.77.0.2", "203.0.113.7:443", "tls"}};
  r.landlock_abi = 7;
  r.landlock_parts = {"fs", "net", "scope"};
  r.exit_code = 0;
  r.reason = DispatchReason::kExited;
  r.started_at = "2026-12-01T15:00:00Z";
  r.setup_ms = 12.25;
  r.total_ms = 100;
  return r;
}

TEST(StatusJsonTest, ExitedDocumentIsExact) {
  EXPECT_EQ(RenderStatusJson(Finished()),
            "{\n"
            "  \"dispatch_id\": \"20261201-abc\",\n"
            "  \"workspace\": \"/w/ws\",\n"
            "  \"out\": \"/w/out\",\n"
            "  \"backend\": \"native\",\n"
            "  \"routes\": [{\"host\": \"api.example.com\", \"port\": 443, \"kind\": \"tls\", "
            "\"sandbox_address\": \"127.77.0.2\", \"upstream\": \"203.0.113.7:443\"}],\n"
            "  \"exit_code\": 0,\n"
            "  \"signal\": null,\n"
            "  \"signal_name\": null,\n"
            "  \"reason\": \"exited\",\n"
            "  \"stop_signal\": null,\n"
            "  \"error\": null,\n"
            "  \"network_note\": null,\n"
            "  \"limits\": null,\n"
            "  \"started_at\": \"2026-12-01T15:00:00Z\",\n"
            "  \"labels\": {},\n"
            "  \"landlock\": {\"abi\": 7, \"enforced\": [\"fs\", \"net\", \"scope\"]},\n"
            "  \"base_commit\": null,\n"
            "  \"workspace_tainted\": false,\n"
            "  \"workspace_taint\": [],\n"
            "  \"patch_error\": null,\n"
            "  \"timings_ms\": {\"setup\": 12.2, \"total\": 100.0}\n"
            "}\n");
}

TEST(StatusJsonTest, EveryReasonRendersItsFields) {
  struct Case {
    DispatchReason reason;
    int exit_code;
    std::optional<int> signal;
    const char* error;
  };
  for (const Case& c :
       {Case{DispatchReason::kSignaled, 137, 9, ""}, Case{DispatchReason::kTimeout, 124, 9, ""},
        Case{DispatchReason::kInterrupted, 130, 2, ""}, Case{DispatchReason::kOom, 137, 9, ""},
        Case{DispatchReason::kDryRun, 0, {}, ""},
        Case{DispatchReason::kRuntimeError, 125, {}, "--allow x: bad"}}) {
    DispatchResult r = Finished();
    r.reason = c.reason;
    r.exit_code = c.exit_code;
    r.signal = c.signal;
    r.error = c.error;
    r.backend = DispatchBackend::kBwrap;
    std::string doc = RenderStatusJson(r);
    EXPECT_NE(doc.find("\"reason\": \"" + std::string(ReasonName(c.reason)) + "\""),
              std::string::npos)
        << doc;
    EXPECT_NE(doc.find("\"exit_code\": " + std::to_string(c.exit_code) + ","), std::string::npos);
    EXPECT_NE(doc.find(c.signal ? "\"signal\": " + std::to_string(*c.signal) + ","
                                : std::string("\"signal\": null,")),
              std::string::npos);
    EXPECT_NE(doc.find(*c.error ? std::string("\"error\": \"") + c.error + "\""
                                : std::string("\"error\": null")),
              std::string::npos);
    EXPECT_NE(doc.find("\"backend\": \"bwrap\""), std::string::npos);
  }
}

TEST(StatusJsonTest, HostileStringsAreQuoted) {
  DispatchResult r = Finished();
  r.workspace = "/w/\"quote\\back\nnew\x01";
  r.error = "line\"x";
  std::string doc = RenderStatusJson(r);
  EXPECT_NE(doc.find(R"("workspace": "/w/\"quote\\back\nnew\u0001")"), std::string::npos) << doc;
  EXPECT_NE(doc.find(R"("error": "line\"x")"), std::string::npos) << doc;
}

}  // namespace
}  // namespace sbx::dispatch
