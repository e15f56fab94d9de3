// The safetensors format over bytes in memory (declarations beyond the public ones in
// dew/safetensors.h): the dtype table and the header text a writer emits.
#pragma once

#include <dew/safetensors.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace dew {

// The position of a dtype in the reference's alignment order; -1 for an unknown name.
int safetensors_dtype_rank(std::string_view dtype);
std::vector<std::string_view> safetensors_dtype_names();

// The compact JSON header for entries already laid out (in order, contiguous offsets), with
// `__metadata__` first when not empty, padded with spaces to a multiple of 8 bytes.
std::string safetensors_header_text(const std::vector<SafetensorsEntry>& tensors,
                                    const std::map<std::string, std::string>& metadata);

// model.safetensors.index.json's weight_map: tensor name -> shard file name, each shard a plain file
// name in the index's own directory (a path elsewhere is refused, not followed). `source` names it.
std::map<std::string, std::string> parse_safetensors_index(std::string_view text, const std::string& source);

}  // namespace dew
