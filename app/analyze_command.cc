#include "app/analyze_command.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include "diagnostics/analyze/analyzer.h"
#include "diagnostics/analyze/input_paths.h"
#include "diagnostics/analyze/text_report.h"

namespace ccscope::app {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> inputs;
  std::string json_path;
  std::vector<std::string> rule_dirs;
};

int runAnalyze(const AnalyzeOptions& opt) {
  auto inputs = diagnostics::expandInputs(opt.inputs);
  if (!inputs.isOk()) {
    std::fprintf(stderr, "ccscope analyze: %s\n", inputs.status().message().c_str());
    return kExitUsage;
  }
  auto result = diagnostics::analyzeInputs(*inputs, opt.rule_dirs);
  if (!result.isOk()) {
    std::fprintf(stderr, "ccscope analyze: %s\n", result.status().message().c_str());
    return kExitUsage;
  }
  const auto& d = result->diagnosis;
  const bool json_to_stdout = opt.json_path == "-";
  if (!opt.json_path.empty()) {
    const std::string text = reports::toJsonText(d) + "\n";
    if (json_to_stdout) {
      std::cout << text;
    } else {
      std::ofstream out(opt.json_path);
      if (!(out << text)) {
        std::fprintf(stderr, "ccscope analyze: cannot write %s\n", opt.json_path.c_str());
        return kExitUsage;
      }
    }
  }
  // With --json - the report goes to stderr so stdout stays machine-readable.
  (json_to_stdout ? std::cerr : std::cout) << diagnostics::renderText(d, result->notes);
  return d.conclusive ? kExitOk : kExitFailed;
}

}  // namespace

Command addAnalyzeCommand(CLI::App& root) {
  auto opt = std::make_shared<AnalyzeOptions>();
  CLI::App* sub = root.add_subcommand(
      "analyze", "Offline: decompose a failed job's logs from all ranks, layer by layer");
  sub->add_option("inputs", opt->inputs,
                  "Log files, directories (searched recursively), globs, or - for stdin; "
                  "plain text or gzip")
      ->required();
  sub->add_option("--json", opt->json_path, "Write the diagnosis as JSON to FILE (- for stdout)");
  sub->add_option("--rules", opt->rule_dirs,
                  "Directory of extra rule files (*.toml) added to the built-in rules")
      ->check(CLI::ExistingDirectory);
  return {sub, [opt] { return runAnalyze(*opt); }};
}

}  // namespace ccscope::app
