// scheduler.cpp — continuous batching; the plan is in scheduler.h.
//
// Why batching decode is nearly free: one decode step of one sequence reads
// every weight once to multiply it by one vector, so its time is the time to
// stream the weights from memory (book/12-performance.md). Eight sequences
// in one step read the same weights once and multiply them by eight vectors:
// the extra arithmetic hides under the same memory traffic. Attention is
// the part that does not batch (each sequence reads its own cache), and it
// is small next to the weights at these lengths.
//
// Why answers do not change: the matrix products sum every row in one
// order whatever the batch (kernels_fast.cpp), attention runs per sequence
// over its own positions, and each request has its own sampler and seed. So
// a request's logits, and with them its text, are the same bits alone or
// among others (tests/test_batching.cpp, tests/check_batching.sh).
#include "serve/scheduler.h"
#include <algorithm>
#include "logging.h"
#include "trace_report.h"


void scheduler_init(Scheduler& s, Net& net, const Tokenizer& tok, int n_slots, int batch_tokens, int queue_limit,
                    int n_ctx, int kv_tokens, DType kv_type) {
    if (n_slots < 1) fail("--parallel %d: at least one request must be able to run", n_slots);
    if (batch_tokens < n_slots)
        fail("--batch-tokens %d: a step must hold at least one token per slot (--parallel %d)", batch_tokens, n_slots);
    s.net = &net;
    s.tok = &tok;
    s.n_ctx = n_ctx;
    s.batch_tokens = batch_tokens;
    s.queue_limit = queue_limit;
    s.slots.assign(n_slots, Slot());
    kv_pages_init(s.pages, net.model->cfg, kv_tokens > 0 ? kv_tokens : n_slots * n_ctx, kv_type);
    // A step's largest scratch, now rather than in the middle of a burst
    // (net.h:net_reserve): at most --batch-tokens rows, and no more than
    // every slot's whole context.
    net_reserve(net, (int)std::min<long long>(batch_tokens, (long long)n_slots * n_ctx), n_slots);
    s.stats.slots = n_slots;
    s.stats.blocks_total = s.pages.n_blocks;
    s.stats.block_tokens = s.pages.block;
    s.stats.slot_state.assign(n_slots, "free");
}

int scheduler_blocks_needed(const Scheduler& s, const SchedRequest& r) {
    long long most = (long long)r.prompt.size() + r.gen.n_predict;
    return kv_blocks_for(s.pages, (int)std::min<long long>(most, s.n_ctx));
}

std::string scheduler_submit(Scheduler& s, const std::shared_ptr<SchedRequest>& r) {
    if (scheduler_blocks_needed(s, *r) > s.pages.n_blocks) return "too_large";
    std::lock_guard<std::mutex> lk(s.mu);
    if (s.stopping) return "stopping";
    if ((int)s.waiting.size() >= s.queue_limit) return "queue_full";
    s.waiting.push_back(r);
    s.stats.waiting = (int)s.waiting.size();
    s.cv.notify_all();
    return "";
}

static void refresh_stats(Scheduler& s);

// The request leaves: its blocks go back to the pool, its client gets the end.
static void finish(Scheduler& s, Slot& slot, const std::string& error = "", int status = 500) {
    generation_end(slot.gen);
    kv_seq_free(s.pages, slot.kv);
    s.reserved -= slot.reserved;
    std::shared_ptr<SchedRequest> r = std::move(slot.req);
    GenerateResult res = std::move(slot.gen.res);
    slot = Slot();
    {
        std::lock_guard<std::mutex> lk(s.mu);
        s.stats.requests_done++;
        refresh_stats(s);  // before the answer: a client that reads /metrics next sees its blocks back
    }
    if (res.finish == Finish::Aborted && error.empty())
        LOGI(CAT_SERVER, "request %d: the client went away; generation stopped after %zu tokens", r->id, res.ids.size());
    if (r->done) r->done(res, error, status);
}

// A waiting request that never ran: its client left, or the server stops.
static void finish_waiting(SchedRequest& r, const std::string& error, int status) {
    GenerateResult res;
    res.finish = Finish::Aborted;
    if (error.empty()) LOGI(CAT_SERVER, "request %d: the client went away while it waited", r.id);
    if (r.done) r.done(res, error, status);
}

static void start(Scheduler& s, Slot& slot, std::shared_ptr<SchedRequest> r, int blocks) {
    slot.req = std::move(r);
    slot.reserved = blocks;
    s.reserved += blocks;
    sampler_init(slot.sampler, slot.req->gen.sampling);
    generation_start(slot.gen, *s.tok, s.net->model->cfg, slot.sampler, slot.req->prompt, slot.req->gen, slot.req->hooks);
    slot.t_join = now_s();
    // Prefix reuse: whole blocks of this prompt that another sequence already
    // wrote (the same system prompt, the earlier turns of this chat) are
    // shared instead of read again. The last prompt token is always read:
    // its logits give the first answer token. The promise above still counts
    // every block, shared or not, so it stays an upper bound.
    const std::vector<int>& p = slot.req->prompt;
    slot.prefilled = kv_seq_share(s.pages, slot.kv, p.data(), (int)p.size() - 1);
    {
        std::lock_guard<std::mutex> lk(s.mu);
        s.stats.prompt_tokens_reused += slot.prefilled;
    }
    if (slot.req->on_start) slot.req->on_start();
    LOGD(CAT_SERVER, "request %d joins: %zu prompt tokens (%d shared from the cache), seed %u, %d blocks promised",
         slot.req->id, p.size(), slot.prefilled, slot.req->gen.sampling.seed, blocks);
}

// The sequence's full blocks join the prefix index as they are written:
// its tokens are the prompt, then the answer tokens fed back so far.
static void index_blocks(Scheduler& s, Slot& slot) {
    KVSeq& kv = slot.kv;
    if (kv.n_pos / s.pages.block <= kv.indexed) return;
    std::vector<int> tokens = slot.req->prompt;
    tokens.insert(tokens.end(), slot.gen.res.ids.begin(), slot.gen.res.ids.end());
    kv_seq_index(s.pages, kv, tokens.data(), std::min((int)tokens.size(), kv.n_pos));
}

// Step 3's rule. Decode rows come first because a generating request must
// never wait: its client sees the pause. Prompts go oldest first (by id,
// not by slot) so that a request that has waited longest gets its first
// token soonest; the budget caps the step's rows, so a long prompt is read
// over several steps beside everyone's decode rows instead of stalling
// them. --batch-tokens is at least --parallel, so every decode row fits.
std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens) {
    std::vector<StepRows> rows;
    int budget = batch_tokens;
    for (int i = 0; i < (int)slots.size(); i++)
        if (slots[i].busy && slots[i].decoding) {
            rows.push_back({i, 1, true});
            budget--;
        }
    std::vector<int> prefilling;
    for (int i = 0; i < (int)slots.size(); i++)
        if (slots[i].busy && !slots[i].decoding) prefilling.push_back(i);
    std::sort(prefilling.begin(), prefilling.end(), [&](int a, int b) { return slots[a].id < slots[b].id; });
    for (int i : prefilling) {
        int left = slots[i].prompt_len - slots[i].prefilled, n = std::min(left, budget);
        if (n <= 0) break;
        rows.push_back({i, n, n == left});  // the prompt's last token: its logits give the first answer token
        budget -= n;
    }
    return rows;
}

// Steps 1 and 2: leave and join.
static void leave_and_join(Scheduler& s) {
    for (Slot& slot : s.slots)
        if (slot.req && slot.req->cancelled && slot.req->cancelled()) {
            slot.gen.res.finish = Finish::Aborted;
            finish(s, slot);
        }
    std::vector<std::shared_ptr<SchedRequest>> gone;
    for (Slot& slot : s.slots) {
        if (slot.req) continue;
        std::shared_ptr<SchedRequest> r;
        int blocks = 0;
        {
            std::lock_guard<std::mutex> lk(s.mu);
            for (auto it = s.waiting.begin(); it != s.waiting.end();) {  // clients that left while waiting
                if ((*it)->cancelled && (*it)->cancelled()) {
                    gone.push_back(*it);
                    it = s.waiting.erase(it);
                } else ++it;
            }
            if (s.waiting.empty()) break;
            // Oldest first. The pool must be able to hold everything this
            // request may ever need besides what the running ones were
            // promised: then no sequence can run out of blocks mid-answer,
            // and nobody's cache is ever taken away. Until then it waits.
            blocks = scheduler_blocks_needed(s, *s.waiting.front());
            if (s.reserved + blocks > s.pages.n_blocks) break;
            r = s.waiting.front();
            s.waiting.pop_front();
        }
        start(s, slot, r, blocks);
    }
    for (auto& r : gone) finish_waiting(*r, "", 0);
}

// Slot states and block counts for the stats (model thread, under the lock).
static void refresh_stats(Scheduler& s) {
    SchedStats& st = s.stats;
    st.busy = st.prefilling = st.decoding = 0;
    for (size_t i = 0; i < s.slots.size(); i++) {
        const Slot& slot = s.slots[i];
        if (!slot.req) {
            st.slot_state[i] = "free";
            continue;
        }
        st.busy++;
        if (slot.next < 0) {
            st.prefilling++;
            st.slot_state[i] = strprintf("prefill %d/%zu #%d", slot.prefilled, slot.req->prompt.size(), slot.req->id);
        } else {
            st.decoding++;
            st.slot_state[i] = strprintf("decode %zu #%d", slot.gen.res.ids.size(), slot.req->id);
        }
    }
    st.waiting = (int)s.waiting.size();
    st.blocks_used = s.pages.n_blocks - kv_blocks_free(s.pages);
    st.blocks_cached = kv_blocks_cached(s.pages);
}

bool scheduler_step(Scheduler& s) {
    leave_and_join(s);

    // Step 3: the batch. plan_step says which rows; here they become
    // BatchSeqs pointing at each sequence's tokens and cache.
    std::vector<SlotView> view(s.slots.size());
    for (size_t i = 0; i < s.slots.size(); i++) {
        const Slot& slot = s.slots[i];
        if (slot.req) view[i] = {true, slot.req->id, (int)slot.req->prompt.size(), slot.prefilled, slot.next >= 0};
    }
    std::vector<BatchSeq> batch;
    std::vector<KVSeq*> tables;  // batch[i]'s block table
    std::vector<Slot*> who;
    for (const StepRows& p : plan_step(view, s.batch_tokens)) {
        Slot& slot = s.slots[p.slot];
        BatchSeq b;
        b.tokens = view[p.slot].decoding ? &slot.next : slot.req->prompt.data() + slot.prefilled;
        b.T = p.n;
        b.pos = slot.kv.n_pos;
        b.logits = p.logits;
        batch.push_back(b);
        tables.push_back(&slot.kv);
        who.push_back(&slot);
    }
    if (batch.empty()) return false;

    // Step 4: one forward for everyone, then each sequence's own sampler.
    // With --report or --trace-json the step is recorded: who ran in it, and
    // what each one did (trace_report.h:StepRecord).
    bool recording = trace_recording();
    StepRecord rec;
    rec.t0_us = trace_now_us();
    const float* logits = nullptr;
    KernelScratch& ks = kernel_scratch();  // this thread's: the one forward_batch runs the kernels with
    ks.timed = recording;
    ks.matmul_s = ks.attention_s = 0;
    try {
        kv_batch_reserve(s.pages, tables.data(), batch.data(), (int)batch.size());
        logits = forward_batch(*s.net, batch.data(), (int)batch.size());
        ks.timed = false;
        if (recording) {
            rec.forward_us = trace_now_us() - rec.t0_us;
            rec.matmul_us = ks.matmul_s * 1e6;
            rec.attention_us = ks.attention_s * 1e6;
        }
    } catch (const LanternError& e) {  // cannot happen with the promises above; never silently
        ks.timed = false;
        LOGE(CAT_SERVER, "batch of %zu sequences: %s", batch.size(), e.what());
        for (Slot* slot : who) finish(s, *slot, e.what(), 500);
        return true;
    }
    int vocab = s.net->model->cfg.vocab, row = 0, generated = 0, prompt_rows = 0;
    for (size_t i = 0; i < batch.size(); i++) {
        Slot& slot = *who[i];
        if (recording) {
            StepSeq q;
            q.request = slot.req->id;
            q.slot = (int)(&slot - s.slots.data());
            q.prefill = slot.next < 0;
            q.pos = batch[i].pos;
            q.T = batch[i].T;
            q.blocks = (int)slot.kv.blocks.size();
            rec.seqs.push_back(q);
        }
        if (slot.next < 0) {
            slot.prefilled += batch[i].T;
            prompt_rows += batch[i].T;
        }
        index_blocks(s, slot);
        if (!batch[i].logits) continue;
        float* l = const_cast<float*>(logits) + (size_t)row++ * vocab;
        bool first = slot.next < 0;
        int t = -1;
        bool more = generation_step(slot.gen, l, slot.kv.n_pos, &t);
        if (recording) rec.seqs.back().token = t;
        generated++;
        if (first) {
            slot.gen.res.prefill_ms = slot.gen.res.ttft_ms = (now_s() - slot.t_join) * 1000;
        } else {
            slot.gen.res.decode_forwards++;
        }
        slot.gen.res.decode_ms = (now_s() - slot.t_join) * 1000 - slot.gen.res.ttft_ms;
        // Step 5: stopped requests leave now.
        if (more && slot.kv.n_pos >= s.n_ctx) {
            slot.gen.res.finish = Finish::Context;
            more = false;
        }
        if (!more) {
            if (recording) rec.seqs.back().left = finish_name(slot.gen.res.finish);
            finish(s, slot);
        } else {
            slot.next = t;
        }
    }
    if (recording) {
        rec.t1_us = trace_now_us();
        rec.sample_us = rec.t1_us - rec.t0_us - rec.forward_us;
        trace_step(std::move(rec));
    }

    // The numbers /metrics shows.
    double t = now_s();
    std::lock_guard<std::mutex> lk(s.mu);
    SchedStats& st = s.stats;
    st.steps++;
    st.tokens_generated += generated;
    st.prompt_tokens += prompt_rows;
    s.recent.emplace_back(t, st.tokens_generated);
    while (s.recent.size() > 2 && t - s.recent.front().first > 5.0) s.recent.pop_front();
    double span = t - s.recent.front().first;
    st.tokens_per_s = span > 0 ? (st.tokens_generated - s.recent.front().second) / span : 0;
    refresh_stats(s);
    return true;
}

void scheduler_run(Scheduler& s) {
    for (;;) {
        {
            std::unique_lock<std::mutex> lk(s.mu);
            refresh_stats(s);
            bool busy = std::any_of(s.slots.begin(), s.slots.end(), [](const Slot& x) { return x.req != nullptr; });
            // Idle: sleep until a request comes. A request that waits for
            // blocks is woken by a finishing one (the same thread), so
            // nothing waits here while work is possible.
            if (!busy) s.cv.wait(lk, [&] { return !s.waiting.empty() || s.stopping; });
            if (s.stopping) break;
        }
        scheduler_step(s);
    }
    // Shutting down: every request still here ends with an error.
    for (Slot& slot : s.slots)
        if (slot.req) {
            slot.gen.res.finish = Finish::Aborted;
            finish(s, slot, "the server is shutting down", 503);
        }
    std::deque<std::shared_ptr<SchedRequest>> left;
    {
        std::lock_guard<std::mutex> lk(s.mu);
        left.swap(s.waiting);
        refresh_stats(s);
    }
    for (auto& r : left) finish_waiting(*r, "the server is shutting down", 503);
}

void scheduler_stop(Scheduler& s) {
    std::lock_guard<std::mutex> lk(s.mu);
    s.stopping = true;
    s.cv.notify_all();
}

SchedStats scheduler_stats(Scheduler& s) {
    std::lock_guard<std::mutex> lk(s.mu);
    return s.stats;
}
