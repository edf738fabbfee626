// See chat_golden.h.
#include "tests/support/chat_golden.h"

namespace zinf::testing {

formats::ChatTemplateInputs ChatGoldenInputs(const nlohmann::ordered_json& line, std::time_t now) {
  formats::ChatTemplateInputs inputs;
  inputs.messages = line.at("messages");
  inputs.add_generation_prompt = line.value("add_generation_prompt", false);
  if (line.contains("tools")) inputs.tools = line["tools"];
  if (line.contains("documents")) inputs.documents = line["documents"];
  if (line.contains("kwargs")) inputs.kwargs = line["kwargs"];
  inputs.now = now;
  return inputs;
}

}  // namespace zinf::testing
