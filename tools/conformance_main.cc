// sdx-conformance: runs ONNX node test cases in this process (developer tool; the
// `sdx conformance` CLI isolates cases in worker processes and writes JSON).
//
//   sdx-conformance DATA_DIR [REGEX] [-v]
#include <cstdio>
#include <filesystem>
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
  for (const std::string& c : cases) {
    auto r = sdx::testing::run_conformance_case(c);
    ++counts[r.outcome];
    if (verbose || r.outcome == sdx::testing::CaseResult::kFailed)
      std::printf("%-8s %s %s\n", sdx::testing::outcome_name(r.outcome),
                  std::filesystem::path(c).filename().c_str(), r.reason.c_str());
  }
  std::printf("%d passed, %d failed, %d skipped\n", counts[0], counts[1], counts[2]);
  return counts[1] == 0 ? 0 : 1;
}
