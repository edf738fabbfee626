// libFuzzer target: a .safetensors file (8-byte header length, JSON header, data) through
// SafetensorsFile, which must refuse bad headers with a zinf::Error and never hand out a tensor
// span outside the file.
#include <cstddef>
#include <cstdint>

#include "model_formats/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zinf::fuzz::MemFile file(data, size);
  zinf::fuzz::ExpectZinfErrorsOnly([&] {
    zinf::formats::SafetensorsFile safetensors(file.path());
    for (const zinf::formats::SafetensorsTensor& tensor : safetensors.tensors()) {
      // The span must lie inside the data section of the mapped file; touching its first and last
      // byte makes an escape a SEGV even where ASan cannot see into the mapping.
      zinf::fuzz::FuzzCheck(tensor.data.size() <= size, "tensor larger than the file");
      if (!tensor.data.empty()) {
        volatile std::byte first = tensor.data.front();
        volatile std::byte last = tensor.data.back();
        (void)first;
        (void)last;
      }
    }
  });
  return 0;
}
