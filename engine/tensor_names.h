// Canonical names of the tensors inside each extent. The converter writes them, the forward pass
// reads them; docs/format.md lists which Hugging Face tensor each one comes from.
#pragma once

namespace zinf::tensor_names {

// Extent "embed".
inline constexpr const char* kTokenEmbed = "token_embed";        // [vocab, embed_dim]
inline constexpr const char* kPositionEmbed = "position_embed";  // OPT: [max_pos + offset, hidden]
inline constexpr const char* kProjectIn = "project_in";          // OPT: [hidden, embed_dim]

// Extents "layer.N".
inline constexpr const char* kAttnNorm = "attn_norm";  // [hidden]
inline constexpr const char* kAttnNormBias = "attn_norm_bias";
inline constexpr const char* kQ = "q";  // [q_dim, hidden]
inline constexpr const char* kK = "k";  // [kv_dim, hidden]
inline constexpr const char* kV = "v";  // [kv_dim, hidden]
inline constexpr const char* kO = "o";  // [hidden, q_dim]
inline constexpr const char* kQBias = "q_bias";
inline constexpr const char* kKBias = "k_bias";
inline constexpr const char* kVBias = "v_bias";
inline constexpr const char* kOBias = "o_bias";
inline constexpr const char* kQNorm = "q_norm";      // qwen3: [head_dim]
inline constexpr const char* kKNorm = "k_norm";      // qwen3: [head_dim]
inline constexpr const char* kFfnNorm = "ffn_norm";  // [hidden]
inline constexpr const char* kFfnNormBias = "ffn_norm_bias";
inline constexpr const char* kGate = "gate";  // llama: [ffn, hidden]
inline constexpr const char* kUp = "up";      // [ffn, hidden] (OPT fc1)
inline constexpr const char* kDown = "down";  // [hidden, ffn] (OPT fc2)
inline constexpr const char* kGateBias = "gate_bias";
inline constexpr const char* kUpBias = "up_bias";
inline constexpr const char* kDownBias = "down_bias";

// Extents "layer.N" of a mixture-of-experts layer hold, instead of gate/up/down:
inline constexpr const char* kRouter = "router";  // [num_experts, hidden]
// Qwen2-MoE: a shared expert every token uses, scaled by sigmoid(shared_expert_gate · x).
inline constexpr const char* kSharedGate = "shared_gate";               // [shared_ffn, hidden]
inline constexpr const char* kSharedUp = "shared_up";                   // [shared_ffn, hidden]
inline constexpr const char* kSharedDown = "shared_down";               // [hidden, shared_ffn]
inline constexpr const char* kSharedExpertGate = "shared_expert_gate";  // [1, hidden]
// Extents "layer.N.expert.E": one expert's kGate, kUp ([expert_ffn, hidden]) and kDown.

// Extent "head". lm_head is always present: tied embeddings are copied here by the converter
// so the head extent is self-contained and streams in one read.
inline constexpr const char* kFinalNorm = "final_norm";  // [hidden]
inline constexpr const char* kFinalNormBias = "final_norm_bias";
inline constexpr const char* kProjectOut = "project_out";  // OPT: [embed_dim, hidden]
inline constexpr const char* kLmHead = "lm_head";          // [vocab, embed_dim]

}  // namespace zinf::tensor_names
