// ReferenceLastLogits: textbook transformer equations over std::vector<double>, one token at a time
// through the whole sequence, no caching, no batching, no vectorisation.
#include "tests/support/reference_forward.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "engine/dtype.h"
#include "model_formats/safetensors.h"

namespace zinf::testing {

namespace {

using Vec = std::vector<double>;
using Mat = std::vector<Vec>;  // rows

struct Weights {
  formats::SafetensorsCheckpoint checkpoint;
  explicit Weights(const std::string& dir) : checkpoint(dir) {}

  bool Has(const std::string& name) const { return checkpoint.find(name) != nullptr; }
  Vec Flat(const std::string& name) const {
    const formats::SafetensorsTensor* t = checkpoint.find(name);
    if (t == nullptr) throw std::runtime_error("reference: missing tensor " + name);
    size_t count = 1;
    for (int64_t d : t->shape) count *= d;
    std::vector<float> f(count);
    ConvertToF32(t->dtype, t->data.data(), f.data(), count);
    return Vec(f.begin(), f.end());
  }
  Mat Matrix(const std::string& name) const {
    const formats::SafetensorsTensor* t = checkpoint.find(name);
    if (t == nullptr) throw std::runtime_error("reference: missing tensor " + name);
    const Vec flat = Flat(name);
    const size_t rows = t->shape[0], cols = t->shape[1];
    Mat m(rows, Vec(cols));
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c) m[r][c] = flat[r * cols + c];
    return m;
  }
};

Vec Linear(const Vec& x, const Mat& w, const Vec* bias) {
  Vec y(w.size(), 0.0);
  for (size_t r = 0; r < w.size(); ++r) {
    double s = 0;
    for (size_t c = 0; c < x.size(); ++c) s += w[r][c] * x[c];
    y[r] = s + (bias ? (*bias)[r] : 0.0);
  }
  return y;
}

Vec RmsNorm(const Vec& x, const Vec& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double scale = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

Vec LayerNorm(const Vec& x, const Vec& w, const Vec& b, double eps) {
  double mean = 0;
  for (double v : x) mean += v;
  mean /= x.size();
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= x.size();
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = (x[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
  return y;
}

void RotateHalf(Vec& x, int num_heads, int head_dim, int position, double theta) {
  const int half = head_dim / 2;
  for (int h = 0; h < num_heads; ++h) {
    for (int i = 0; i < half; ++i) {
      const double angle = position / std::pow(theta, 2.0 * i / head_dim);
      double& a = x[h * head_dim + i];
      double& b = x[h * head_dim + i + half];
      const double a0 = a, b0 = b;
      a = a0 * std::cos(angle) - b0 * std::sin(angle);
      b = b0 * std::cos(angle) + a0 * std::sin(angle);
    }
  }
}

// Causal attention of query position t over keys/values 0..t.
Vec Attend(const Vec& q, const Mat& keys, const Mat& values, int num_heads, int num_kv_heads,
           int head_dim) {
  Vec out(static_cast<size_t>(num_heads) * head_dim, 0.0);
  for (int h = 0; h < num_heads; ++h) {
    const int g = h / (num_heads / num_kv_heads);
    Vec scores(keys.size());
    double max_score = -1e300;
    for (size_t s = 0; s < keys.size(); ++s) {
      double dot = 0;
      for (int d = 0; d < head_dim; ++d) dot += q[h * head_dim + d] * keys[s][g * head_dim + d];
      scores[s] = dot / std::sqrt(static_cast<double>(head_dim));
      max_score = std::max(max_score, scores[s]);
    }
    double sum = 0;
    for (double& s : scores) sum += (s = std::exp(s - max_score));
    for (size_t s = 0; s < keys.size(); ++s)
      for (int d = 0; d < head_dim; ++d)
        out[h * head_dim + d] += scores[s] / sum * values[s][g * head_dim + d];
  }
  return out;
}

Vec SwiGlu(const Vec& h, const Mat& gate, const Mat& up, const Mat& down) {
  const Vec g = Linear(h, gate, nullptr), u = Linear(h, up, nullptr);
  Vec a(g.size());
  for (size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
  return Linear(a, down, nullptr);
}

// A sparse MoE block as transformers' Mixtral / Qwen2-MoE / Qwen3-MoE compute it: softmax over
// all router logits, the k most probable experts, their weights renormalised (Mixtral always,
// Qwen when norm_topk_prob), the weighted sum of their SwiGLU outputs, plus Qwen2-MoE's shared
// expert scaled by sigmoid(shared_expert_gate · h).
Vec MoeBlock(const Weights& w, const nlohmann::json& cfg, const std::string& block, const Vec& h) {
  const bool mixtral = cfg["model_type"] == "mixtral";
  const int k = cfg["num_experts_per_tok"];
  const Vec logits = Linear(h, w.Matrix(block + "gate.weight"), nullptr);
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  Vec probabilities(logits.size());
  double sum = 0;
  for (size_t e = 0; e < logits.size(); ++e)
    sum += (probabilities[e] = std::exp(logits[e] - max_logit));
  for (double& p : probabilities) p /= sum;
  std::vector<int> order(logits.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int>(e);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return probabilities[a] > probabilities[b]; });
  double chosen = 0;
  for (int i = 0; i < k; ++i) chosen += probabilities[order[i]];
  const bool renormalise = mixtral || cfg.value("norm_topk_prob", false);
  Vec out(h.size(), 0.0);
  for (int i = 0; i < k; ++i) {
    const std::string expert = block + "experts." + std::to_string(order[i]) + ".";
    const Vec y = mixtral ? SwiGlu(h, w.Matrix(expert + "w1.weight"),
                                   w.Matrix(expert + "w3.weight"), w.Matrix(expert + "w2.weight"))
                          : SwiGlu(h, w.Matrix(expert + "gate_proj.weight"),
                                   w.Matrix(expert + "up_proj.weight"),
                                   w.Matrix(expert + "down_proj.weight"));
    const double weight = probabilities[order[i]] / (renormalise ? chosen : 1.0);
    for (size_t d = 0; d < out.size(); ++d) out[d] += weight * y[d];
  }
  if (w.Has(block + "shared_expert_gate.weight")) {
    const std::string shared = block + "shared_expert.";
    const Vec y =
        SwiGlu(h, w.Matrix(shared + "gate_proj.weight"), w.Matrix(shared + "up_proj.weight"),
               w.Matrix(shared + "down_proj.weight"));
    const double gate = Linear(h, w.Matrix(block + "shared_expert_gate.weight"), nullptr)[0];
    const double scale = 1.0 / (1.0 + std::exp(-gate));
    for (size_t d = 0; d < out.size(); ++d) out[d] += scale * y[d];
  }
  return out;
}

}  // namespace

std::vector<double> ReferenceLastLogits(const std::string& hf_dir,
                                        const std::vector<int>& token_ids) {
  std::ifstream config_file(hf_dir + "/config.json");
  const nlohmann::json cfg = nlohmann::json::parse(config_file);
  const Weights w(hf_dir);
  const std::string type = cfg["model_type"];
  const bool opt = type == "opt";
  const int hidden = cfg["hidden_size"];
  const int num_layers = cfg["num_hidden_layers"];
  const int num_heads = cfg["num_attention_heads"];
  const int num_kv_heads = opt ? num_heads : cfg.value("num_key_value_heads", num_heads);
  const int head_dim = cfg.contains("head_dim") && cfg["head_dim"].is_number()
                           ? cfg["head_dim"].get<int>()
                           : hidden / num_heads;
  const double eps = opt ? 1e-5 : cfg.value("rms_norm_eps", 1e-6);
  const double theta = cfg.value("rope_theta", 10000.0);
  const std::string p = opt ? "model.decoder." : "model.";
  auto bias = [&](const std::string& name) -> std::optional<Vec> {
    if (!w.Has(name)) return std::nullopt;
    return w.Flat(name);
  };

  const size_t n = token_ids.size();
  const Mat embed = w.Matrix(p + "embed_tokens.weight");
  Mat x(n);
  for (size_t t = 0; t < n; ++t) {
    x[t] = embed[token_ids[t]];
    if (opt) {
      if (w.Has(p + "project_in.weight"))
        x[t] = Linear(x[t], w.Matrix(p + "project_in.weight"), nullptr);
      const Mat positions = w.Matrix(p + "embed_positions.weight");
      for (int i = 0; i < hidden; ++i) x[t][i] += positions[t + 2][i];
    }
  }
  for (int l = 0; l < num_layers; ++l) {
    const std::string lp = p + "layers." + std::to_string(l) + ".";
    const std::string ap = lp + "self_attn.";
    const std::string o_name = opt ? "out_proj" : "o_proj";
    const Mat wq = w.Matrix(ap + "q_proj.weight"), wk = w.Matrix(ap + "k_proj.weight");
    const Mat wv = w.Matrix(ap + "v_proj.weight"), wo = w.Matrix(ap + o_name + ".weight");
    const auto bq = bias(ap + "q_proj.bias"), bk = bias(ap + "k_proj.bias");
    const auto bv = bias(ap + "v_proj.bias"), bo = bias(ap + o_name + ".bias");
    Mat keys, values;
    Mat attn_out(n);
    for (size_t t = 0; t < n; ++t) {
      const Vec h = opt ? LayerNorm(x[t], w.Flat(lp + "self_attn_layer_norm.weight"),
                                    w.Flat(lp + "self_attn_layer_norm.bias"), eps)
                        : RmsNorm(x[t], w.Flat(lp + "input_layernorm.weight"), eps);
      Vec q = Linear(h, wq, bq ? &*bq : nullptr);
      Vec k = Linear(h, wk, bk ? &*bk : nullptr);
      Vec v = Linear(h, wv, bv ? &*bv : nullptr);
      if (w.Has(ap + "q_norm.weight")) {
        const Vec qn = w.Flat(ap + "q_norm.weight"), kn = w.Flat(ap + "k_norm.weight");
        for (int hh = 0; hh < num_heads; ++hh) {
          Vec head(q.begin() + hh * head_dim, q.begin() + (hh + 1) * head_dim);
          head = RmsNorm(head, qn, eps);
          std::copy(head.begin(), head.end(), q.begin() + hh * head_dim);
        }
        for (int hh = 0; hh < num_kv_heads; ++hh) {
          Vec head(k.begin() + hh * head_dim, k.begin() + (hh + 1) * head_dim);
          head = RmsNorm(head, kn, eps);
          std::copy(head.begin(), head.end(), k.begin() + hh * head_dim);
        }
      }
      if (!opt) {
        RotateHalf(q, num_heads, head_dim, static_cast<int>(t), theta);
        RotateHalf(k, num_kv_heads, head_dim, static_cast<int>(t), theta);
      }
      keys.push_back(k);
      values.push_back(v);
      attn_out[t] = Linear(Attend(q, keys, values, num_heads, num_kv_heads, head_dim), wo,
                           bo ? &*bo : nullptr);
    }
    for (size_t t = 0; t < n; ++t) {
      for (int i = 0; i < hidden; ++i) x[t][i] += attn_out[t][i];
      Vec mlp;
      if (opt) {
        const Vec h = LayerNorm(x[t], w.Flat(lp + "final_layer_norm.weight"),
                                w.Flat(lp + "final_layer_norm.bias"), eps);
        const auto b1 = bias(lp + "fc1.bias"), b2 = bias(lp + "fc2.bias");
        Vec a = Linear(h, w.Matrix(lp + "fc1.weight"), b1 ? &*b1 : nullptr);
        for (double& v : a) v = std::max(v, 0.0);
        mlp = Linear(a, w.Matrix(lp + "fc2.weight"), b2 ? &*b2 : nullptr);
      } else {
        const Vec h = RmsNorm(x[t], w.Flat(lp + "post_attention_layernorm.weight"), eps);
        for (const char* block : {"block_sparse_moe.", "mlp."}) {
          if (w.Has(lp + block + "gate.weight")) mlp = MoeBlock(w, cfg, lp + block, h);
        }
      }
      if (!opt && mlp.empty()) {
        const Vec h = RmsNorm(x[t], w.Flat(lp + "post_attention_layernorm.weight"), eps);
        const auto bg = bias(lp + "mlp.gate_proj.bias"), bu = bias(lp + "mlp.up_proj.bias");
        const auto bd = bias(lp + "mlp.down_proj.bias");
        const Vec g = Linear(h, w.Matrix(lp + "mlp.gate_proj.weight"), bg ? &*bg : nullptr);
        const Vec u = Linear(h, w.Matrix(lp + "mlp.up_proj.weight"), bu ? &*bu : nullptr);
        Vec a(g.size());
        for (size_t i = 0; i < g.size(); ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        mlp = Linear(a, w.Matrix(lp + "mlp.down_proj.weight"), bd ? &*bd : nullptr);
      }
      for (int i = 0; i < hidden; ++i) x[t][i] += mlp[i];
    }
  }
  Vec last = x.back();
  if (opt) {
    last = LayerNorm(last, w.Flat(p + "final_layer_norm.weight"),
                     w.Flat(p + "final_layer_norm.bias"), eps);
    if (w.Has(p + "project_out.weight"))
      last = Linear(last, w.Matrix(p + "project_out.weight"), nullptr);
  } else {
    last = RmsNorm(last, w.Flat(p + "norm.weight"), eps);
  }
  const Mat head = w.Has("lm_head.weight") ? w.Matrix("lm_head.weight") : embed;
  return Linear(last, head, nullptr);
}

}  // namespace zinf::testing
