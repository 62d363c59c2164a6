// lens.h — inside the prediction: the logit lens, direct logit attribution
// and ablation, over the residual stream the forward pass already computes.
//
// The residual stream is a sum. After layer l of L, position p holds
//
//   x_l = embed + (attn_0 + mlp_0) + ... + (attn_{l-1} + mlp_{l-1})
//
// and the logits are lm_head . rmsnorm(x_L). Three tools follow from that:
//   the logit lens      read x_l through the final norm and the LM head as if
//                       the model ended at layer l (at l = L: the logits);
//   direct attribution  freeze the final norm's scale s, and the logit of a
//                       token v splits into one term per summand:
//                       s * (lm_head[v] * final_norm) . summand;
//   ablation            switch a head or an MLP off (net.h: Ablation) and see
//                       what the output loses.
// The numbers come from the probes (logging.h: WATCH_TENSOR): the engine's
// own tensors, captured as the forward pass writes them.
#pragma once
#include <string>
#include <vector>
#include "kernels.h"
#include "net.h"

// ---------------------------------------------------------------------------
// What one forward pass leaves for the lens: per position below `cap`, the
// residual stream at every depth and each block's output. Depth d is the
// stream after d layers: 0 the embedding, n_layers what the final norm reads.
struct LensCapture {
    int n_layers = 0, hidden = 0, q_dim = 0, cap = 0;
    int n_pos = 0;              // positions 0..n_pos-1 have been seen
    std::vector<float> resid;   // [n_layers+1, cap, hidden]
    std::vector<float> attn;    // [n_layers, cap, hidden]  attention block output (after Wo)
    std::vector<float> heads;   // [n_layers, cap, q_dim]   each head's output before Wo
    std::vector<float> mlp;     // [n_layers, cap, hidden]  MLP block output
    const float* resid_row(int depth, int pos) const { return &resid[((size_t)depth * cap + pos) * hidden]; }
};
void lens_capture_init(LensCapture& cap, const Config& c, int positions);
// A watched tensor (logging.h: ProbeListener's tensor): embed, attn.out,
// attn.o_proj, mlp.down and resid are kept; rows past the cap are dropped.
void lens_capture_tensor(LensCapture& cap, const char* name, int layer, int pos0, const float* data, int rows, int cols);
// Runs tokens[0..T) from position 0 on a fresh cache with the capture
// listening; returns the logits of every position, [T, vocab].
std::vector<float> lens_forward(Net& net, LensCapture& cap, const std::vector<int>& tokens);

// ---------------------------------------------------------------------------
// The logit lens at one depth: each captured position's residual stream
// after `depth` layers through the final norm and the LM head, the same
// kernels in the same order as net.cpp's lm_head, so at depth n_layers it
// gives the model's logits bit for bit. logits: [cap.n_pos, vocab].
// (chapters/lens: the exercise writes this one.)
void lens_layer(const Model& m, const LensCapture& cap, int depth, float* logits);

// One row of logits read as a distribution: the k most likely tokens and
// where `target` stands (rank 1 = the most likely).
struct LensReading {
    std::vector<int> top;
    std::vector<float> top_prob;
    float target_prob = 0;
    int target_rank = 0;
};
LensReading lens_read(const float* logits, int vocab, int k, int target);

// ---------------------------------------------------------------------------
// Direct logit attribution of token `token` at position `pos`: the final
// norm's scale frozen at the value it has for this position, each summand
// of the stream dotted with u = s * lm_head[token] * final_norm. The terms
// add up to `total`, which is the logit up to rounding.
struct Attribution {
    int pos = 0, token = 0;
    float scale = 0;                         // s = 1 / rms(x_L), frozen
    double embed = 0;
    std::vector<double> attn, mlp;           // per layer
    std::vector<std::vector<double>> heads;  // per layer, per head: they add up to attn
    double total = 0;                        // embed + every attn + every mlp
};
Attribution attribute(const Model& m, const LensCapture& cap, int pos, int token);

// ---------------------------------------------------------------------------
// Ablation. "L.H" (head H of layer L) or "L.mlp": *head is -1 for an MLP.
// Throws LanternError naming the flag for anything else.
void parse_ablate_spec(const std::string& spec, int* layer, int* head);
// The specs of --ablate checked against the model (layer and head in range).
Ablation ablation_from_specs(const std::vector<std::string>& specs, const Config& c);

// Each head and each MLP switched off alone (on top of net.ablate): the
// change it makes to log p(target) at position pos, tokens run from 0.
struct AblationEffect {
    int layer = 0, head = 0;  // head -1: the MLP
    double logprob = 0, delta = 0;
};
// Sorted by delta, the most harmful first (the parts the target needs most).
std::vector<AblationEffect> ablation_effects(Net& net, const std::vector<int>& tokens, int pos, int target);
