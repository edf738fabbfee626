// An independent, deliberately naive float64 forward pass straight from a Hugging Face directory
// (config.json + safetensors, HF tensor names), used to check the engine's numerics on random
// checkpoints for which no outside reference exists. It shares no code with engine/.
#pragma once

#include <string>
#include <vector>

namespace zinf::testing {

// Logits ([vocab], float64) at the last position of `token_ids` for the model in `hf_dir`.
// Supports model_type llama/mistral/qwen2/qwen3 (RMSNorm, rotate_half RoPE without scaling,
// GQA, biases, q/k norm, tied embeddings), mixtral/qwen2_moe/qwen3_moe (routed experts, shared
// expert, dense layers among sparse ones) and opt (pre-LayerNorm, learned positions, ReLU,
// project_in/out).
std::vector<double> ReferenceLastLogits(const std::string& hf_dir,
                                        const std::vector<int>& token_ids);

}  // namespace zinf::testing
