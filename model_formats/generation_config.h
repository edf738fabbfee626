// generation_config.json: the end-of-turn tokens a checkpoint's authors made generation stop at
// (often several, e.g. Llama-3-Instruct's <|end_of_text|> and <|eot_id|>).
#pragma once

#include <filesystem>
#include <vector>

namespace zinf::formats {

// `eos_token_id` of a generation_config.json (an integer or a list of them); empty when the file
// or the field is absent or null. Failure: zinf::Error naming the file for malformed JSON or a
// value that is not a token id.
std::vector<int> GenerationConfigEosIds(const std::filesystem::path& file);

// `ids` followed by each of `more` not already in it: the config's order kept, nothing twice.
void AppendMissingIds(const std::vector<int>& more, std::vector<int>& ids);

}  // namespace zinf::formats
