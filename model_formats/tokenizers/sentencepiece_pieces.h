// A check of a SentencePiece model's pieces before libsentencepiece sees them: the library's trie
// builder throws through code that cannot pass exceptions on (the process aborts) when a piece is
// empty or starts with a NUL byte, so such files are refused here with an error instead.
#pragma once

#include <string>
#include <string_view>

namespace zinf::formats {

// Scans the serialized ModelProto's `pieces` (field 1, each a message whose field 1 is the piece
// text). Throws zinf::Error naming `path` and the piece's index for an empty piece or one holding
// a NUL byte. Wire data it cannot follow is left for the library to report.
void CheckSentencePiecePieces(std::string_view model_proto, const std::string& path);

}  // namespace zinf::formats
