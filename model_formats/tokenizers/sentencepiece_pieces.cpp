// CheckSentencePiecePieces: a minimal protobuf wire-format walk (varints and length-delimited
// fields only need following; other wire types are skipped by their fixed sizes).
#include "model_formats/tokenizers/sentencepiece_pieces.h"

#include <cstdint>
#include <optional>

#include "engine/error.h"

namespace zinf::formats {

namespace {

class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }

  std::optional<uint64_t> Varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && at_ < bytes_.size(); shift += 7) {
      const auto byte = static_cast<uint8_t>(bytes_[at_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return value;
    }
    return std::nullopt;
  }

  // The next field: its number and, for length-delimited ones, its bytes. nullopt: malformed.
  struct Field {
    uint64_t number;
    std::optional<std::string_view> bytes;
  };
  std::optional<Field> Next() {
    const std::optional<uint64_t> key = Varint();
    if (!key) return std::nullopt;
    Field field{*key >> 3, std::nullopt};
    switch (*key & 7) {
      case 0:
        if (!Varint()) return std::nullopt;
        break;
      case 1:
        if (!Skip(8)) return std::nullopt;
        break;
      case 5:
        if (!Skip(4)) return std::nullopt;
        break;
      case 2: {
        const std::optional<uint64_t> length = Varint();
        if (!length || *length > bytes_.size() - at_) return std::nullopt;
        field.bytes = bytes_.substr(at_, *length);
        at_ += *length;
        break;
      }
      default: return std::nullopt;
    }
    return field;
  }

 private:
  bool Skip(size_t count) {
    if (count > bytes_.size() - at_) return false;
    at_ += count;
    return true;
  }
  std::string_view bytes_;
  size_t at_ = 0;
};

// The piece text of one SentencePiece message, if it has one.
std::optional<std::string_view> PieceText(std::string_view message) {
  WireReader reader(message);
  std::optional<std::string_view> text;
  while (!reader.done()) {
    const auto field = reader.Next();
    if (!field) return text;
    if (field->number == 1 && field->bytes) text = field->bytes;
  }
  return text;
}

}  // namespace

void CheckSentencePiecePieces(std::string_view model_proto, const std::string& path) {
  WireReader reader(model_proto);
  size_t index = 0;
  while (!reader.done()) {
    const auto field = reader.Next();
    if (!field) return;  // malformed: the library's parser says so
    if (field->number != 1 || !field->bytes) continue;
    const std::optional<std::string_view> piece = PieceText(*field->bytes);
    if (piece && (piece->empty() || piece->find('\0') != std::string_view::npos)) {
      Fail("tokenizer '{}': piece {} is {}; this is not a usable SentencePiece model", path, index,
           piece->empty() ? "empty" : "text with a NUL byte");
    }
    ++index;
  }
}

}  // namespace zinf::formats
