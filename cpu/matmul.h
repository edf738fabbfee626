// Matrix products of f32 activations with f32/f16/bf16 weights for the CPU backend.
// Every output element is computed by the same sequence of operations whatever the number of
// tokens or threads, so a sequence's results do not depend on the batch it is in.
#pragma once

#include <cstdint>

#include "cpu/isa.h"
#include "engine/backend.h"

namespace zinf::cpu {

struct SharedActivations;

// out[t * out_stride + r] = dot(x[t * x_stride : +w.cols], w[r]) + bias[r], for tokens
// [0, num_tokens) and weight rows [row_begin, row_end). bias may be empty.
// Runs at ActiveCpuIsa() unless `isa` says otherwise (tests compare the levels).
// x_version, when not 0, promises that x's contents are the same in every call on this thread
// with that version (from NewActivationVersion()), so a kernel may reuse its packing of x between
// the products of one input (q, k and v; gate and up). `shared`, when it serves w, holds x
// already quantized for every thread (cpu/shared_activations.h).
void MatMulRows(const float* x, int64_t x_stride, int64_t num_tokens, const Weight& w,
                const Weight& bias, float* out, int64_t out_stride, int64_t row_begin,
                int64_t row_end, CpuIsa isa = ActiveCpuIsa(), uint64_t x_version = 0,
                const SharedActivations* shared = nullptr);

// The most tokens a product with weights of `dtype` takes at `isa` through the lone token's
// strided tiles (cpu/tiling.h), one token after another, so that its rows are read as those
// tiles' streams (cpu/product_sequence.cpp reads ahead in the same order). The AVX2 kernels'
// walks ask it too, so the two cannot disagree.
int64_t OneTokenTileMaxTokens(DType dtype, CpuIsa isa);
// The rows of those tiles, a stride apart: the streams a lone token's product reads.
int OneTokenTileStreams(DType dtype, CpuIsa isa);

// A version no earlier call has had, process-wide.
uint64_t NewActivationVersion();

// Element idx of a weight vector, converted to f32.
float WeightValue(const Weight& w, int64_t idx);

}  // namespace zinf::cpu
