// The UCX side of the library probe, run in the helper child (`ccscope diagnose
// --library-init-child ucx`): read the configuration from the environment, ucp_init, create a
// worker, print the version and the transports found, clean up. UCX's own log (UCX_LOG_LEVEL is
// set by the parent) goes to stderr, where the parent reads it.
#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "diagnostics/live/library_init.h"

namespace ccscope::diagnostics {

namespace {

// "#      resource 2  :  md 1  dev 2  flags -- tcp/eth0" -> "tcp/eth0".
std::vector<std::string> resources(ucp_context_h ctx) {
  std::vector<std::string> out;
  char* text = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  if (!f) return out;
  ucp_context_print_info(ctx, f);
  std::fclose(f);
  std::string all(text ? text : "", len);
  std::free(text);
  size_t pos = 0;
  while ((pos = all.find("resource", pos)) != std::string::npos) {
    size_t eol = all.find('\n', pos);
    std::string line = all.substr(pos, eol - pos);
    size_t dash = line.find("-- ");
    if (dash != std::string::npos) {
      std::string r = line.substr(dash + 3);
      r.erase(r.find_last_not_of(" \t") + 1);
      out.push_back(r);
    }
    pos = eol == std::string::npos ? all.size() : eol;
  }
  return out;
}

int fail(const char* call, ucs_status_t s) {
  std::printf("%s error: %s: %s\n", kInitLinePrefix, call, ucs_status_string(s));
  std::fflush(stdout);
  return 1;
}

}  // namespace

int ucxInitChild() {
  std::printf("%s version %s\n", kInitLinePrefix, ucp_get_version_string());
  std::fflush(stdout);
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) return fail("ucp_config_read", s);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA;
  ucp_context_h ctx = nullptr;
  s = ucp_init(&params, config, &ctx);
  ucp_config_release(config);
  if (s != UCS_OK) return fail("ucp_init", s);
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker = nullptr;
  s = ucp_worker_create(ctx, &wp, &worker);
  if (s != UCS_OK) {
    ucp_cleanup(ctx);
    return fail("ucp_worker_create", s);
  }
  std::string list;
  for (const auto& r : resources(ctx)) list += (list.empty() ? "" : " ") + r;
  std::printf("%s transports %s\n", kInitLinePrefix, list.c_str());
  ucp_worker_destroy(worker);
  ucp_cleanup(ctx);
  std::printf("%s ok\n", kInitLinePrefix);
  return 0;
}

}  // namespace ccscope::diagnostics
