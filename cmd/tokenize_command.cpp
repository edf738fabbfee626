// zinf tokenize / detokenize: JSONL on stdin, JSONL on stdout, one object per line.
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "cmd/commands.h"
#include "engine/error.h"
#include "model_formats/json_depth.h"
#include "model_formats/tokenizers/tokenizer_loader.h"
#include "model_formats/zinf_format.h"

namespace zinf::cli {

namespace {

struct TokenizeOptions {
  std::string model_dir;
  std::string tokenizer_file;
  bool no_special = false;
};

std::unique_ptr<Tokenizer> OpenTokenizer(const TokenizeOptions& options) {
  if (!options.model_dir.empty() == !options.tokenizer_file.empty()) {
    Fail("give exactly one of --model DIR and --tokenizer FILE");
  }
  if (!options.model_dir.empty()) {
    return formats::LoadCheckpointTokenizer(formats::LoadCheckpoint(options.model_dir));
  }
  if (options.tokenizer_file.ends_with(".json")) {
    return formats::LoadHfJsonTokenizer(options.tokenizer_file);
  }
  // A bare tokenizer.model: BOS added, EOS not, as Llama-family tokenizer configs default to.
  return formats::LoadSentencePieceTokenizer(options.tokenizer_file, true, false);
}

nlohmann::json ParseLine(const std::string& line, int64_t line_number) {
  if (const auto offset = formats::FindJsonNestingOver(line)) {
    Fail("stdin:{}: JSON nested deeper than {} levels at byte {}", line_number,
         formats::kMaxJsonDepth, *offset);
  }
  try {
    nlohmann::json object = nlohmann::json::parse(line);
    if (!object.is_object()) Fail("stdin:{}: expected a JSON object", line_number);
    return object;
  } catch (const nlohmann::json::parse_error& error) {
    Fail("stdin:{}: malformed JSON at byte {}: {}", line_number, error.byte, error.what());
  } catch (const nlohmann::json::exception& error) {  // e.g. a number out of range (1e400)
    Fail("stdin:{}: unusable JSON: {}", line_number, error.what());
  }
}

// Runs `convert` on each non-empty stdin line and prints its result as one JSON line.
template <typename Convert>
void ForEachLine(Convert convert) {
  std::string line;
  int64_t line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::cout << convert(ParseLine(line, line_number), line_number)
                     .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
              << '\n';
  }
  std::cout.flush();
}

void RunTokenize(const TokenizeOptions& options) {
  const std::unique_ptr<Tokenizer> tokenizer = OpenTokenizer(options);
  ForEachLine([&](const nlohmann::json& object, int64_t line_number) {
    if (!object.contains("text") || !object["text"].is_string()) {
      Fail("stdin:{}: expected {{\"text\": \"...\"}}", line_number);
    }
    const std::string text = object["text"].get<std::string>();
    if (const int64_t bad = FindInvalidUtf8(text); bad >= 0) {
      Fail("stdin:{}: text is not valid UTF-8 at byte {}", line_number, bad);
    }
    return nlohmann::json{{"ids", tokenizer->Encode(text, !options.no_special)}};
  });
}

void RunDetokenize(const TokenizeOptions& options) {
  const std::unique_ptr<Tokenizer> tokenizer = OpenTokenizer(options);
  ForEachLine([&](const nlohmann::json& object, int64_t line_number) {
    if (!object.contains("ids") || !object["ids"].is_array()) {
      Fail("stdin:{}: expected {{\"ids\": [...]}}", line_number);
    }
    std::vector<TokenId> ids;
    for (const nlohmann::json& id : object["ids"]) {
      if (!id.is_number_integer()) Fail("stdin:{}: ids must be integers", line_number);
      const int64_t value = id.get<int64_t>();
      if (value < 0 || value >= tokenizer->vocab_size()) {
        Fail("stdin:{}: id {} is outside the vocabulary (0..{})", line_number, value,
             tokenizer->vocab_size() - 1);
      }
      ids.push_back(static_cast<TokenId>(value));
    }
    return nlohmann::json{{"text", tokenizer->Decode(ids)}};
  });
}

void AddTokenizerOptions(CLI::App* command, TokenizeOptions& options) {
  command->add_option("--model", options.model_dir, "converted zinf checkpoint directory");
  command->add_option("--tokenizer", options.tokenizer_file,
                      "a tokenizer.json or tokenizer.model file");
}

}  // namespace

void AddTokenizeCommands(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* tokenize = app.add_subcommand(
      "tokenize", "JSONL {\"text\": ...} on stdin -> {\"ids\": [...]} on stdout");
  AddTokenizerOptions(tokenize, *options);
  tokenize->add_flag("--no-special", options->no_special, "do not add BOS/EOS");
  tokenize->callback([options] { RunTokenize(*options); });

  auto detokenize_options = std::make_shared<TokenizeOptions>();
  CLI::App* detokenize = app.add_subcommand(
      "detokenize", "JSONL {\"ids\": [...]} on stdin -> {\"text\": ...} on stdout");
  AddTokenizerOptions(detokenize, *detokenize_options);
  detokenize->callback([detokenize_options] { RunDetokenize(*detokenize_options); });
}

}  // namespace zinf::cli
