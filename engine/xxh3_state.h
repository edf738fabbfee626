// A streaming XXH3 state owned by a unique_ptr, for checksums fed piece by piece (an extent as its
// chunks arrive, a tensor within it). Creating and freeing a state is not among the names
// engine/xxh3.h dispatches, so headers may include this one.
#pragma once

#include <memory>

#include <xxhash.h>

#include "engine/error.h"

namespace zinf {

struct FreeXxh3State {
  void operator()(XXH3_state_t* state) const { XXH3_freeState(state); }
};
using Xxh3State = std::unique_ptr<XXH3_state_t, FreeXxh3State>;

// A new state (to be reset before use), or an error if the library could not allocate one.
inline Xxh3State NewXxh3State() {
  Xxh3State state(XXH3_createState());
  ZINF_CHECK(state != nullptr, "XXH3_createState failed");
  return state;
}

}  // namespace zinf
