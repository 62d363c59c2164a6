// scheduler.h — continuous batching: many requests share the model, one
// batched forward per step (./run serve --parallel N).
//
// Each step the scheduler
//   1. drops the requests whose client left (their blocks go back at once),
//   2. lets waiting requests join while a slot is free and the KV pool can
//      promise them every block they may need; a joining prompt shares the
//      blocks of its beginning that are already in the cache (kv_pages.h),
//   3. builds one batch: one row per decoding request (its last token), then
//      prompt chunks of the requests still in prefill, up to --batch-tokens
//      rows in all, so a long prompt never stalls everyone's next token
//      (plan_step decides the rows),
//   4. runs forward_batch, and gives each sequence whose logits came back
//      to its own sampler (generation_step: the same rules as ./run),
//   5. finishes the requests that stopped: they leave the batch now.
//
// No socket in here: the server (server.cpp) hands requests in with
// callbacks, and tests drive the steps directly.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include "serve/kv_pages.h"
#include "generate.h"

struct SchedRequest {
    int id = 0;
    std::vector<int> prompt;
    GenerateParams gen;
    GenerateHooks hooks;              // called on the model thread; on_text false = stop
    std::function<bool()> cancelled;  // polled every step, also while it waits or prefills
    std::function<void()> on_start;   // it joins the batch (optional)
    // Called once at the end, on the model thread. error: empty, or why there
    // is no complete answer (status: the HTTP status that fits it).
    std::function<void(GenerateResult&, const std::string& error, int status)> done;
};

// Step 3 as a pure function of the slots (plan_step): what it sees of a
// slot, and the rows it gives one sequence. chapters/scheduler has the
// reader write it.
struct SlotView {
    bool busy = false;      // false: the slot is free (the other fields mean nothing)
    int id = 0;             // the request's number: a lower id arrived earlier
    int prompt_len = 0;     // tokens in its prompt (at least 1)
    int prefilled = 0;      // prompt tokens already in its KV cache
    bool decoding = false;  // the whole prompt is in: each step feeds back its last sampled token
};
struct StepRows {
    int slot = 0;           // which slot (index into the slots)
    int n = 0;              // how many of its tokens ride in this step
    bool logits = false;    // its last row's logits are sampled this step
};
// The rows of the next step, in batch order: one for every decoding slot
// (slot order), then prompt chunks, the oldest request first, each
// min(tokens left, rows left) until batch_tokens rows are spent; logits for
// every decode row and for a chunk that ends its prompt.
std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens);

// One running request.
struct Slot {
    std::shared_ptr<SchedRequest> req;  // null: the slot is free
    KVSeq kv;                           // its pages
    int reserved = 0;                   // blocks promised to it at admission
    int prefilled = 0;                  // prompt tokens in the cache
    int next = -1;                      // decoding: the sampled token to feed back
    Sampler sampler;
    Generation gen;
    double t_join = 0;                  // seconds (scheduler clock)
};

// What /metrics and /health report (a copy, taken under the lock).
struct SchedStats {
    int slots = 0, busy = 0, prefilling = 0, decoding = 0, waiting = 0;
    int blocks_total = 0, blocks_used = 0, blocks_cached = 0, block_tokens = 0;
    long long steps = 0, tokens_generated = 0, prompt_tokens = 0, prompt_tokens_reused = 0, requests_done = 0;
    double tokens_per_s = 0;  // generated tokens per second over the last few seconds
    std::vector<std::string> slot_state;  // per slot: "free", "prefill 12/40 #3", "decode 7 #2"
};

struct Scheduler {
    Net* net = nullptr;
    const Tokenizer* tok = nullptr;
    KVPages pages;
    int n_ctx = 0;          // most positions one sequence may hold
    int batch_tokens = 0;   // rows per step at most (decode rows always fit)
    int queue_limit = 0;
    std::vector<Slot> slots;
    int reserved = 0;       // blocks promised to running requests (model thread only)

    std::mutex mu;          // guards the queue, stopping and stats
    std::condition_variable cv;
    std::deque<std::shared_ptr<SchedRequest>> waiting;
    bool stopping = false;
    SchedStats stats;
    std::deque<std::pair<double, long long>> recent;  // (time, tokens generated) of the last steps
};

// n_slots requests at once; a pool of kv_tokens positions (0: n_slots * n_ctx).
void scheduler_init(Scheduler& s, Net& net, const Tokenizer& tok, int n_slots, int batch_tokens, int queue_limit,
                    int n_ctx, int kv_tokens, DType kv_type);
// Blocks a request may need at most: its prompt plus every token it may generate.
int scheduler_blocks_needed(const Scheduler& s, const SchedRequest& r);
// Queues a request. Returns "" or why not: "queue_full" (more than queue_limit
// wait), "too_large" (it could never fit the KV pool), "stopping".
std::string scheduler_submit(Scheduler& s, const std::shared_ptr<SchedRequest>& r);
// One step (the five above). Returns false when there was nothing to run.
bool scheduler_step(Scheduler& s);
// Steps until scheduler_stop; then every running and waiting request ends
// with a 503 "the server is shutting down".
void scheduler_run(Scheduler& s);
void scheduler_stop(Scheduler& s);
SchedStats scheduler_stats(Scheduler& s);
