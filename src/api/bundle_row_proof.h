// A session's row proof (runtime/row_proof.h) in a bundle's manifest. The proof is made on the graph as
// loaded, before the optimizer; a bundle holds the optimized graph, whose fused ops (sdx.FusedConv,
// sdx.Linear, ...) have no row rules, so a session loaded from a bundle (sdx compile, the disk plan cache)
// takes the proof the bundle kept instead of proving again.
//
//   row_dim.<dim>=<why not, empty when proven>          one line per symbolic input dim
//   row_axes.<dim>=<output>:<axis>,<output>:<axis>      per proven dim, the graph outputs that carry it
//
// Names and reasons are percent-encoded where they hold '%', '=', ',', ':', or a control character.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "runtime/row_proof.h"

namespace sdx::api {

void write_row_proof(const runtime::RowProof& proof, std::map<std::string, std::string>& manifest);

// The proof a manifest holds (empty when it holds none); an error names the malformed entry.
Result<runtime::RowProof> read_row_proof(const std::map<std::string, std::string>& manifest);

}  // namespace sdx::api
