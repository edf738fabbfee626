// The mixture-of-experts FFN of Model (engine/model.h). Per micro-batch, from the layer's extent:
// the router's logits and the shared expert. Once every micro-batch is routed and the layer's
// extent released: each expert some token chose, once, over all of its tokens (gather → SwiGLU as
// batched products → weighted add into the residual stream), in ascending expert order so every
// token sums its experts in the same order whatever the batch or placement. Only the routed
// experts are asked of the weight source, all of them prefetched at once so reads overlap compute.
// With Placement::host_computes_experts, the experts the device does not hold are computed by a
// CPU backend from host memory: the step's FFN inputs are copied to the host once per layer, and
// each such expert's outputs back to the device, where they are added in the same order.
#include <cmath>
#include <iterator>

#include "engine/error.h"
#include "engine/model.h"
#include "engine/planner/memory_model.h"
#include "engine/tensor_names.h"

namespace zinf {

namespace tn = tensor_names;

void Model::MapExperts(const Placement& placement) {
  const ModelConfig& c = config();
  if (!c.is_moe()) return;
  expert_extents_.assign(c.num_layers, {});
  moves_when_used_.assign(checkpoint_.extents.size(), false);
  computed_on_host_.assign(checkpoint_.extents.size(), false);
  for (size_t e = 0; e < checkpoint_.extents.size(); ++e) {
    const ExtentInfo& extent = checkpoint_.extents[e];
    computed_on_host_[e] = placement.ComputedOnHost(e, extent.kind == ExtentKind::kExpert);
    // On the CPU the device is DRAM, so only file-streamed bytes move; a GPU copies anything it
    // does not hold, unless the CPU computes it where it is.
    moves_when_used_[e] = placement.backend == BackendKind::kCpu || computed_on_host_[e]
                              ? placement[e] == Tier::kNvme
                              : !placement.HeldByBackend(e);
    if (extent.kind != ExtentKind::kExpert) continue;
    ZINF_CHECK(extent.layer >= 0 && extent.layer < c.num_layers && c.IsMoeLayer(extent.layer),
               "extent {} is an expert of no sparse layer", extent.name);
    std::vector<int>& experts = expert_extents_[extent.layer];
    ZINF_CHECK(extent.expert == static_cast<int>(experts.size()), "extent {} out of order",
               extent.name);
    experts.push_back(static_cast<int>(e));
  }
  for (int layer = 0; layer < c.num_layers; ++layer) {
    const size_t expected = c.IsMoeLayer(layer) ? c.moe.num_experts : 0;
    ZINF_CHECK(expert_extents_[layer].size() == expected, "layer {} has {} expert extents, not {}",
               layer, expert_extents_[layer].size(), expected);
  }
  if (placement.host_computes_experts) {
    ZINF_CHECK(host_experts_ != nullptr, "the placement has the CPU compute experts, but no CPU "
                                         "backend was given for them");
    AllocateHostExpertBuffers();
  }
  host_router_logits_.resize(static_cast<size_t>(limits_.max_tokens_per_step) * c.moe.num_experts);
  host_shared_gate_.resize(static_cast<size_t>(limits_.micro_rows()));
  identity_rows_.resize(static_cast<size_t>(limits_.micro_rows()));
  for (size_t i = 0; i < identity_rows_.size(); ++i) identity_rows_[i] = static_cast<int>(i);
}

void Model::AllocateHostExpertBuffers() {
  // The memory model's shapes, as the planner counts them.
  const auto shapes = HostExpertShapes(config(), limits_);
  Tensor* buffers[] = {&host_buffers_.step_input, &host_buffers_.in, &host_buffers_.gate,
                       &host_buffers_.up, &host_buffers_.out};
  ZINF_CHECK(shapes.size() == std::size(buffers), "{} host expert buffers planned, {} taken",
             shapes.size(), std::size(buffers));
  for (size_t i = 0; i < shapes.size(); ++i)
    *buffers[i] = host_experts_->AllocateActivation(shapes[i].first, shapes[i].second);
}

void Model::RunRouterAndSharedExpert(const ExtentView& extent, const std::byte* base,
                                     const MicroBatch& micro, Tensor ffn_input) {
  const MoeConfig& moe = config().moe;
  const int n = micro.num_rows;
  auto weight = [&](const char* name) { return Find(extent, base, name, true); };
  backend_.MatMul(ffn_input, weight(tn::kRouter), {},
                  act_.router_logits.RowRange(micro.row_begin, n));
  if (moe.shared_expert_ffn == 0) return;

  // Qwen2-MoE: x += sigmoid(shared_expert_gate · input) * shared_expert(input).
  const int64_t ffn = moe.shared_expert_ffn;
  Tensor gate{act_.gate.data, n, ffn}, up{act_.up.data, n, ffn};
  Tensor out = act_.normed.FirstRows(n);
  const Backend::Projection up_gate[] = {{weight(tn::kSharedUp), {}, up},
                                         {weight(tn::kSharedGate), {}, gate}};
  backend_.MatMuls(ffn_input, up_gate);
  backend_.SiluMul(gate, up, up);
  backend_.MatMul(up, weight(tn::kSharedDown), {}, out);
  Tensor gate_logit = act_.shared_gate.FirstRows(n);
  backend_.MatMul(ffn_input, weight(tn::kSharedExpertGate), {}, gate_logit);
  std::span<float> scales(host_shared_gate_.data(), n);
  backend_.CopyToHost(gate_logit, scales);
  for (float& s : scales) s = 1.0f / (1.0f + std::exp(-s));
  backend_.ScaleAddRows(out, std::span<const int>(identity_rows_.data(), n), scales,
                        act_.x.RowRange(micro.row_begin, n));
}

void Model::RunExperts(int layer, int num_tokens) {
  const MoeConfig& moe = config().moe;
  const std::span<float> logits(host_router_logits_.data(),
                                static_cast<size_t>(num_tokens) * moe.num_experts);
  backend_.CopyToHost(act_.router_logits.FirstRows(num_tokens), logits);
  routing_.Route(logits, num_tokens, moe);
  if (routing_record_ != nullptr) {
    rows_per_expert_.resize(moe.num_experts);
    for (int expert = 0; expert < moe.num_experts; ++expert)
      rows_per_expert_[expert] = static_cast<int>(routing_.experts()[expert].rows.size());
    routing_record_->Count(layer, rows_per_expert_, num_tokens);
  }

  const std::vector<int>& extents = expert_extents_[layer];
  experts_to_fetch_.clear();
  bool host_computes_some = false;
  for (int expert = 0; expert < moe.num_experts; ++expert) {
    const int e = extents[expert];
    const uint64_t bytes = checkpoint_.extents[e].padded_bytes;
    if (moves_when_used_[e]) expert_traffic_.bytes_dense += bytes;
    if (routing_.experts()[expert].rows.empty()) continue;
    ++expert_traffic_.experts_used;
    if (moves_when_used_[e]) expert_traffic_.bytes_moved += bytes;
    if (backend_resident_[e] == nullptr) experts_to_fetch_.push_back(e);
    host_computes_some |= computed_on_host_[e];
  }
  expert_traffic_.experts_total += moe.num_experts;
  if (host_computes_some) {
    const Tensor inputs = act_.moe_input.FirstRows(num_tokens);
    backend_.CopyToHost(inputs, std::span<float>(static_cast<float*>(host_buffers_.step_input.data),
                                                 static_cast<size_t>(inputs.rows * inputs.cols)));
  }

  // Every routed expert's read is started as far as staging buffers allow; each release frees a
  // buffer for the next one while the expert after it computes.
  size_t fetched = 0;
  auto prefetch_rest = [&] {
    for (size_t i = fetched; i < experts_to_fetch_.size(); ++i)
      weights_.Prefetch(experts_to_fetch_[i]);
  };
  prefetch_rest();
  for (int expert = 0; expert < moe.num_experts; ++expert) {
    const ExpertTokens& tokens = routing_.experts()[expert];
    if (tokens.rows.empty()) continue;
    const int e = extents[expert];
    const std::byte* base = backend_resident_[e];
    if (base != nullptr) {
      RunExpert(backend_, ExtentView{&checkpoint_.extents[e], {}}, base, tokens);
      continue;
    }
    const ExtentView extent = weights_.Acquire(e);
    ++fetched;
    Backend& compute = computed_on_host_[e] ? *host_experts_ : backend_;
    try {
      RunExpert(compute, extent, compute.BindExtent(extent), tokens);
    } catch (const Error& error) {
      Rethrow(error, fmt::format("extent {}", extent.info->name));
    }
    weights_.Release(e, compute.UnbindExtent());
    prefetch_rest();
  }
}

void Model::RunExpert(Backend& compute, const ExtentView& extent, const std::byte* base,
                      const ExpertTokens& tokens) {
  const bool on_host = &compute != &backend_;
  const ExpertBuffers buffers =
      on_host ? host_buffers_
              : ExpertBuffers{act_.moe_input, act_.expert_in, act_.gate, act_.up, act_.normed};
  const int64_t ffn = config().moe.expert_ffn;
  const Weight gate_w = Find(extent, base, tn::kGate, true);
  const Weight up_w = Find(extent, base, tn::kUp, true);
  const Weight down_w = Find(extent, base, tn::kDown, true);
  const int chunk = limits_.micro_rows();
  const int count = static_cast<int>(tokens.rows.size());
  // A micro-batch of the expert's tokens at a time: the buffers hold that many rows.
  for (int begin = 0; begin < count; begin += chunk) {
    const int n = std::min(chunk, count - begin);
    const std::span<const int> rows(tokens.rows.data() + begin, n);
    Tensor in = buffers.in.FirstRows(n), out = buffers.out.FirstRows(n);
    Tensor gate{buffers.gate.data, n, ffn}, up{buffers.up.data, n, ffn};
    compute.GatherRows(buffers.step_input, rows, in);
    const Backend::Projection up_gate[] = {{up_w, {}, up}, {gate_w, {}, gate}};
    compute.MatMuls(in, up_gate);
    compute.SiluMul(gate, up, up);
    compute.MatMul(up, down_w, {}, out);
    if (on_host) {  // to the device, into the buffer its own experts' outputs use
      const Tensor device_out = act_.normed.FirstRows(n);
      backend_.CopyFromHost(std::span<const float>(static_cast<const float*>(out.data),
                                                   static_cast<size_t>(out.rows * out.cols)),
                            device_out);
      out = device_out;
    }
    backend_.ScaleAddRows(out, rows, std::span<const float>(tokens.weights.data() + begin, n),
                          act_.x);
  }
}

}  // namespace zinf
