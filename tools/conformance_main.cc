// sdx-conformance: runs ONNX node test cases in this process (developer tool; the
// `sdx conformance` CLI isolates cases in worker processes and writes JSON).
//
//   sdx-conformance DATA_DIR [REGEX] [-v]
#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "testing/conformance.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR [REGEX] [-v]\n", argv[0]);
    return 2;
  }
  std::string filter = ".*";
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-v") verbose = true;
    else filter = a;
  }
  std::regex re(filter);
  std::vector<std::string> cases;
  for (const auto& e : std::filesystem::directory_iterator(argv[1]))
    if (e.is_directory() && std::regex_search(e.path().filename().string(), re)) cases.push_back(e.path().string());
  std::sort(cases.begin(), cases.end());
  int counts[3] = {0, 0, 0};
  int replayed = 0;
  std::map<std::string, int> not_replayed;  // reason -> passing cases
  for (const std::string& c : cases) {
    auto r = sdx::testing::run_conformance_case(c);
    ++counts[r.outcome];
    if (r.outcome == sdx::testing::CaseResult::kPassed) {
      if (r.replayed) ++replayed;
      else ++not_replayed[r.replay_note];
    }
    if (verbose || r.outcome == sdx::testing::CaseResult::kFailed)
      std::printf("%-8s %s %s\n", sdx::testing::outcome_name(r.outcome),
                  std::filesystem::path(c).filename().c_str(), r.reason.c_str());
  }
  std::printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
  std::printf("%d passing cases replayed bitwise identically to slot by slot; %d did not replay:\n", replayed,
              counts[0] - replayed);
  for (const auto& [reason, n] : not_replayed) std::printf("  %5d  %s\n", n, reason.c_str());
  return counts[1] == 0 ? 0 : 1;
}
