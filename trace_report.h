// trace_report.h — recording one run, for --report, --trace-json and --graph.
//
// The recorder listens to the probes of logging.h (every forward call, every
// layer, every named tensor) and to the generation loop's on_token hook
// (every sampled token with its top-5). At the end of the run it writes:
//
//   --report [FILE]     one self-contained HTML page (trace_report_html.cpp)
//   --trace-json FILE   Chrome Trace Event JSON, for Perfetto / chrome://tracing
//   --graph FILE.dot    the computation graph as Graphviz DOT
//
// When none of them is asked for, trace_start returns false and leaves every
// probe off: the run pays one branch per layer, nothing more.
//
// ./run serve records something else: not the inside of one forward call
// but the scheduler's steps, which sequences ran in each (trace_step). The
// report then draws the batch, step by step and slot by slot, and the
// Chrome trace has one track per slot.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>
#include "lens/lens.h"
#include "logging.h"
#include "model.h"
#include "sampler.h"
#include "tokenizer.h"

struct TraceOptions {
    std::string report_path;  // --report [FILE]  (the flag alone: trace_report.html)
    std::string json_path;    // --trace-json FILE
    std::string graph_path;   // --graph FILE.dot
};

// ---------------------------------------------------------------------------
// What is recorded.

struct SpanRecord {  // a named stretch of time: "load", "tokenize", "generate"
    std::string name;
    double t0_us = 0, t1_us = 0;
};

struct ForwardRecord {  // one call of forward()
    int T = 0, pos = 0;
    bool prefill = true;  // before the first token of its turn was sampled
    double t0_us = 0, t1_us = 0;
    // Of that time, the weight products and attention (kernels.h:
    // KernelScratch's clock): at a long context attention grows with the
    // cache every step reads, the products do not.
    double matmul_us = 0, attention_us = 0;
    std::vector<LayerProbe> layers;
};

struct TokenRecord {  // one sampled token (stop tokens too)
    int pos = 0;        // the position it goes to
    double t_us = 0;    // when the sampler returned it
    SampleInfo info;    // info.token is the chosen id
};

// Serving: one sequence's rows in one scheduler step.
struct StepSeq {
    int request = 0;          // the request's id (its answer's id ends with it: "chatcmpl-7")
    int slot = 0;             // which of the --parallel slots it runs in
    bool prefill = true;      // a chunk of its prompt, or one decode token
    int pos = 0, T = 0;       // its rows: positions pos .. pos+T-1
    int blocks = 0;           // KV blocks in its table after the step
    int token = -1;           // sampled from its last row's logits (-1: none; a prompt chunk before the last)
    const char* left = nullptr;  // it finished in this step: why (finish_name: "length", "stop", ...)
};

// One scheduler step: one forward_batch over every sequence in it, then
// each one's sampler.
struct StepRecord {
    double t0_us = 0, t1_us = 0;
    std::vector<StepSeq> seqs;
    // Where the step's time went: the forward (of it, the weight products
    // and attention; the rest is norms, RoPE, SwiGLU, the embedding) and the
    // samplers after it. The time before t0_us since the previous step's end
    // is the server's own: HTTP, tokenizing, admitting, the queue.
    double forward_us = 0, matmul_us = 0, attention_us = 0, sample_us = 0;
};

// A tensor's statistics, one point per forward call, for the small multiples.
struct TensorSeries {
    std::string name;  // "attn.q"
    int layer = -1;
    std::vector<int> forward;  // index into Recorder::forwards
    std::vector<float> rms, min, max;
};

// Attention weights for positions below `cap`, per layer and head, as
// 8-bit cells: 0 means "not seen" (the masked future, positions never run),
// 1 + round(254 * sqrt(p)) otherwise. The square root spreads the small
// weights, which are most of them, over more levels.
struct AttentionMaps {
    int n_layers = 0, n_heads = 0, cap = 0;
    std::vector<uint8_t> cells;  // [n_layers, n_heads, cap, cap]: query row, key column
    uint8_t& at(int l, int h, int q, int k) { return cells[(((size_t)l * n_heads + h) * cap + q) * cap + k]; }
    uint8_t at(int l, int h, int q, int k) const { return cells[(((size_t)l * n_heads + h) * cap + q) * cap + k]; }
};
const int ATTENTION_CAP = 128;  // positions drawn in the heatmaps
const int LENS_CAP = 64;        // positions of the logit-lens panel (lens/report_lens.cpp)

struct Recorder {
    bool on = false;
    TraceOptions opt;
    double t_start_us = 0;  // every time below is on log_now_us()'s clock
    // The run, for the first section of the report.
    std::string command, prompt, output, finish;
    SamplerParams sampling;
    Config cfg;                        // a copy: it outlives the run
    const Model* model = nullptr;      // borrowed until trace_finish
    const Tokenizer* tok = nullptr;

    std::vector<SpanRecord> spans;
    std::vector<ForwardRecord> forwards;
    std::vector<TokenRecord> tokens;
    std::vector<int> pos_token;       // the token id that went in at each position (-1: none)
    std::vector<uint8_t> pos_generated;  // 1 when that token had been sampled (not prompt)
    bool next_is_prefill = true;      // until the turn's first token is sampled
    std::vector<TensorSeries> series;
    std::map<std::string, int> series_index;  // "L3.attn.q" -> index into series
    AttentionMaps attention;
    LensCapture lens;                 // the residual stream of the first LENS_CAP positions (lens.h)
    bool serving = false;             // ./run serve: steps are recorded, the forward probes stay off
    std::vector<StepRecord> steps;
};
extern Recorder g_rec;
// How many positions went through the model (the last sampled token never does).
int positions_run(const Recorder& r);

// ---------------------------------------------------------------------------
// The run's side. Call order: trace_start, (trace_span)*, trace_set_model,
// trace_set_prompt, generate with on_token = trace_token, trace_finish.

// Starts recording when opt asks for a report or a trace; returns whether it
// did. `command` is the command line, shown in the report. serving: record
// the scheduler's steps (trace_step) instead of probing every forward call,
// which in a batch would mix the sequences' layers and attention.
bool trace_start(const TraceOptions& opt, const std::string& command, bool serving = false);
bool trace_recording();
double trace_now_us();                         // log_now_us(), for trace_span
void trace_span(const char* name, double t0_us);  // a span from t0_us to now
void trace_set_model(const Model& m, const Tokenizer& tok);
void trace_set_prompt(const std::string& prompt, const SamplerParams& s);
void trace_turn_begin();  // chat: the next forward calls are a new prefill
void trace_token(int token, const SampleInfo& info);  // GenerateHooks::on_token
void trace_step(StepRecord&& step);  // serving: a step the scheduler ran (scheduler_step)
// Stops recording and writes what opt asked for; throws LanternError when a
// file can't be written. g_rec keeps the recording until the next start.
void trace_finish(const std::string& output, const std::string& finish);
// Recording off and everything cleared.
void trace_reset();
// --graph FILE.dot: model_graph_dot written to a file. Needs only the config.
void write_graph_dot(const std::string& path, const Config& c);
// The command line quoted back into one string, for the report's header.
std::string command_line(const char* program, int argc, char** argv);

// ---------------------------------------------------------------------------
// The pieces, public for the tests and the book.

std::string trace_json(const Recorder& r);          // Chrome Trace Event format
std::string model_graph_dot(const Config& c);       // the whole model and one decoder layer
std::string report_html(const Recorder& r);         // trace_report_html.cpp
std::string report_lens_section(const Recorder& r); // lens/report_lens.cpp: "" without a model or a stream

// The cost model behind "prefill is compute-bound, decode is memory-bound".
// Per forward call of T tokens at positions pos..pos+T-1, with logits for
// the last token only:
//   weight bytes: every matrix of every layer, plus the LM head, read once
//   FLOPs: 2 per multiply-add; matrices 2*T*params, attention 4*head_dim per
//          (head, query, visible key), LM head 2*vocab*hidden for one row
struct ForwardCost {
    double weight_bytes = 0, kv_bytes = 0, flops = 0;
};
ForwardCost forward_cost(const Model& m, int T, int pos);
double layer_weight_bytes(const Model& m);  // all layers' matrices
double layer_params(const Model& m);        // all layers' matrix elements

// Per phase (prefill or decode) of the recorded run.
struct PhaseTotals {
    int forwards = 0, tokens = 0;  // tokens run through the model
    double ms = 0;                 // summed forward time
    ForwardCost cost;              // summed over the forward calls
};
PhaseTotals phase_totals(const Recorder& r, bool prefill);
