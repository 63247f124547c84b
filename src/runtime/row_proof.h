// RowProof: what analysis/row_padding.h proved of a model's symbolic input dims, as a session keeps it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sdx::runtime {

// Which symbolic input dims padding is exact for, proven on the graph as loaded, before the optimizer
// (analysis/row_padding.h). A bundle keeps it (api/bundle_row_proof.h): its graph is the optimizer's output,
// whose fused ops have no row rules.
struct RowProof {
  // Per symbolic input dim: "" when padding it is exact (rows independent), else why not.
  std::map<std::string, std::string> dims;
  // Per proven dim: graph outputs that carry it (output, axis).
  std::map<std::string, std::vector<std::pair<std::string, int>>> output_axes;
};

}  // namespace sdx::runtime
