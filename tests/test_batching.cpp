// tests/test_batching.cpp — the paged KV cache (kv_pages.cpp) and the
// batched forward (net.cpp:forward_batch): blocks are handed out, refused
// and returned exactly; and a sequence's logits are the same bits whether it
// runs alone through forward() or among others, in any chunking, through
// forward_batch.
#include <doctest/doctest.h>

#include <cstring>
#include <memory>
#include <unistd.h>

#include "cpu/kernel_sets.h"
#include "generate.h"
#include "serve/kv_pages.h"

static Config small_config() {
    Config c;
    c.n_layers = 2;
    c.n_kv_heads = 2;
    c.head_dim = 4;
    return c;
}

TEST_CASE("KV pages: blocks are taken as positions appear and all come back") {
    KVPages kv;
    kv_pages_init(kv, small_config(), 64, DType::F32, 16);  // 4 blocks
    REQUIRE(kv.n_blocks == 4);
    CHECK(kv_blocks_free(kv) == 4);
    KVSeq a, b;
    CHECK(kv_seq_grow(kv, a, 1));  // one position: one block
    CHECK(a.blocks.size() == 1);
    CHECK(kv_seq_grow(kv, a, 16));  // still fits in it
    CHECK(a.blocks.size() == 1);
    CHECK(kv_seq_grow(kv, a, 17));  // one more block
    CHECK(a.blocks.size() == 2);
    CHECK(kv_seq_grow(kv, b, 20));
    CHECK(kv_blocks_free(kv) == 0);
    // Full: the request is refused and nothing changes, for either sequence.
    KVSeq c;
    CHECK_FALSE(kv_seq_grow(kv, c, 1));
    CHECK(c.blocks.empty());
    CHECK_FALSE(kv_seq_grow(kv, a, 33));
    CHECK(a.blocks.size() == 2);
    CHECK(a.n_pos == 17);
    // Two sequences never share a block.
    for (int x : a.blocks)
        for (int y : b.blocks) CHECK(x != y);
    // Rows land in the right block: position 16 of a is row 0 of its second block.
    size_t row = kv.row_bytes();
    CHECK(kv_value(kv, a, 1, 16) == &kv.v[(((size_t)a.blocks[1] * kv.n_layers + 1) * kv.block + 0) * row]);
    CHECK(kv_key(kv, a, 0, 3) == &kv.k[(((size_t)a.blocks[0] * kv.n_layers + 0) * kv.block + 3) * row]);
    CHECK_THROWS_AS(kv_key(kv, a, 0, 17), LanternError);  // past what it holds
    // The forward pass's view of a (kv_cache.h: KVView) finds the same rows.
    KVView view = kv_seq_view(kv, a);
    std::vector<float> key(kv.kv_dim), value(kv.kv_dim);
    for (int i = 0; i < kv.kv_dim; i++) key[i] = 1.0f + i, value[i] = -1.0f - i;
    kv_store(view, 1, 16, key.data(), value.data());
    CHECK(std::memcmp(kv_key(kv, a, 1, 16), key.data(), row) == 0);
    CHECK(std::memcmp(kv_value(kv, a, 1, 16), value.data(), row) == 0);
    CHECK_THROWS_AS(kv_store(view, 0, 17, key.data(), value.data()), LanternError);  // past what it holds
    kv_seq_free(kv, a);
    CHECK(a.blocks.empty());
    CHECK(kv_blocks_free(kv) == 2);
    CHECK(kv_seq_grow(kv, c, 32));  // a's blocks serve someone else now
    kv_seq_free(kv, b);
    kv_seq_free(kv, c);
    CHECK(kv_blocks_free(kv) == 4);
    CHECK_THROWS_AS(kv_pages_init(kv, small_config(), 0, DType::F32), LanternError);
}

TEST_CASE("KV pages: whole blocks of a common beginning are shared, cached when their holders leave, handed out last") {
    KVPages kv;
    kv_pages_init(kv, small_config(), 6 * 4, DType::F32, 4);  // 6 blocks of 4 positions
    std::vector<int> t1 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, t2 = {1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22, 23, 24};
    std::vector<int> t3 = {9, 9, 9, 9, 5, 6, 7, 8};  // t1's second block after another first block
    KVSeq a, b, c;
    CHECK(kv_seq_share(kv, a, t1.data(), 10) == 0);  // nothing indexed yet
    REQUIRE(kv_seq_grow(kv, a, 10));
    kv_seq_index(kv, a, t1.data(), 10);  // blocks 0-3 and 4-7 are full; 8-9 is not
    CHECK(a.indexed == 2);
    CHECK(kv_seq_share(kv, b, t2.data(), 13) == 8);  // t2 begins with t1's 8 tokens
    CHECK(b.blocks == std::vector<int>{a.blocks[0], a.blocks[1]});
    CHECK(kv.refs[a.blocks[0]] == 2);
    CHECK(kv_seq_share(kv, c, t3.data(), 8) == 0);  // same tokens, other beginning: another key
    CHECK(kv_seq_share(kv, c, t1.data(), 7) == 4);   // only whole blocks
    kv_seq_free(kv, c);
    REQUIRE(kv_seq_grow(kv, b, 13));  // b's own blocks after the shared ones
    CHECK(kv_blocks_free(kv) == 6 - 3 - 2);
    kv_seq_free(kv, a);  // b still reads the shared two: only a's last block comes back
    CHECK(kv_blocks_free(kv) == 2);
    CHECK(kv_blocks_cached(kv) == 0);
    kv_seq_index(kv, b, t2.data(), 13);  // b's third block 20-23 joins the index after the shared two
    CHECK(b.indexed == 3);
    kv_seq_free(kv, b);
    CHECK(kv_blocks_free(kv) == 6);
    CHECK(kv_blocks_cached(kv) == 3);  // free, but still holding t2's first 12 tokens
    KVSeq d, e;
    CHECK(kv_seq_share(kv, d, t2.data(), 13) == 12);  // a later request finds them in the cache
    CHECK(kv_blocks_cached(kv) == 0);
    kv_seq_free(kv, d);
    // A new sequence takes the never-used blocks first, then the cached ones,
    // the one unused longest first; a cached block handed out leaves the index.
    REQUIRE(kv_seq_grow(kv, e, 4 * 4));
    CHECK(kv_blocks_cached(kv) == 2);
    CHECK(kv_seq_share(kv, d, t2.data(), 13) == 0);  // its first block went to e
    REQUIRE(kv_seq_grow(kv, e, 6 * 4));
    CHECK(kv.index.empty());
    kv_seq_free(kv, e);
    kv_seq_free(kv, d);
    CHECK(kv_blocks_free(kv) == 6);
}

// Sequence i is fed its tokens in chunks; after each chunk the logits of the
// chunk's last token are compared with the same position's logits from one
// forward() over the whole sequence alone.
struct Feed {
    std::vector<int> tokens;
    int start_step;  // joins the batch at this step
    int chunk;       // tokens per step
};

// alone_threads: the sequences alone run on that many threads (0: all),
// the batch on all of them, so the check covers the thread count too.
static void check_batch_equals_alone(const char* dir, KernelSet set, DType kv_type, int alone_threads = 0) {
    REQUIRE_MESSAGE(access((std::string(dir) + "/model.safetensors").c_str(), F_OK) == 0, "run `make models` first");
    Model m;
    load_model(m, dir);
    Tokenizer tok;
    tokenizer_load(tok, dir);
    kernels_init(set, alone_threads);
    int V = m.cfg.vocab;
    std::vector<Feed> feeds = {
        {tokenizer_encode(tok, "In the beginning God created the heaven and the earth."), 0, 4},
        {tokenizer_encode(tok, "Hello"), 1, 1},
        {tokenizer_encode(tok, "And the earth was without form, and void; and darkness was upon the face of the deep."), 2, 7},
        {tokenizer_encode(tok, "1 2 3 4 5 6 7 8 9 10"), 3, 2},
        // One token a step, as decoding sequences go, two in a step, past
        // their first block: decode's attention reading a block table.
        {tokenizer_encode(tok, "And God said, Let there be light: and there was light."), 0, 1},
        {tokenizer_encode(tok, "And God saw the light, that it was good."), 2, 1},
    };
    // Alone: every position's logits from one forward() per sequence, or,
    // for a sequence fed one token a step, one forward() per token: one
    // query and a tile of many sum in different orders (kernels.h:
    // attention_heads), equal only within rounding, so such a token is
    // compared with itself fed the same way.
    std::vector<std::vector<float>> alone;
    for (const Feed& f : feeds) {
        Net net;
        net_init(net, m, 256, kv_type);
        if (f.chunk == 1) {
            alone.emplace_back(f.tokens.size() * V);
            for (size_t t = 0; t < f.tokens.size(); t++)
                std::copy_n(forward(net, &f.tokens[t], 1, (int)t, false), V, &alone.back()[t * V]);
            continue;
        }
        const float* l = forward(net, f.tokens.data(), (int)f.tokens.size(), 0, true);
        alone.emplace_back(l, l + f.tokens.size() * V);
    }
    // Together: each step runs every sequence that has joined and has tokens left.
    kernels_init(set, 0);
    Net net;
    net_init(net, m, 1, kv_type);  // the batch uses only the Net's scratch
    KVPages pages;
    kv_pages_init(pages, m.cfg, 512, kv_type, 8);
    std::vector<KVSeq> kv(feeds.size());
    std::vector<int> done(feeds.size(), 0);
    int compared = 0;
    for (int step = 0; step < 100; step++) {
        std::vector<BatchSeq> batch;
        std::vector<KVSeq*> tables;
        std::vector<int> who;
        for (size_t i = 0; i < feeds.size(); i++) {
            int left = (int)feeds[i].tokens.size() - done[i];
            if (step < feeds[i].start_step || left == 0) continue;
            BatchSeq s;
            s.tokens = feeds[i].tokens.data() + done[i];
            s.T = std::min(feeds[i].chunk, left);
            s.pos = done[i];
            s.logits = true;
            batch.push_back(s);
            tables.push_back(&kv[i]);
            who.push_back((int)i);
        }
        if (batch.empty()) break;
        kv_batch_reserve(pages, tables.data(), batch.data(), (int)batch.size());
        const float* l = forward_batch(net, batch.data(), (int)batch.size());
        for (size_t j = 0; j < batch.size(); j++) {
            int i = who[j], last = done[i] + batch[j].T - 1;
            INFO("sequence " << i << " position " << last << " step " << step);
            CHECK(std::memcmp(l + j * V, &alone[i][(size_t)last * V], V * sizeof(float)) == 0);
            compared++;
            done[i] += batch[j].T;
        }
    }
    for (size_t i = 0; i < feeds.size(); i++) CHECK(done[i] == (int)feeds[i].tokens.size());
    CHECK(compared > 10);
    for (KVSeq& s : kv) kv_seq_free(pages, s);
    CHECK(kv_blocks_free(pages) == pages.n_blocks);
    kernels_init(KernelSet::Fast, 0);
}

TEST_CASE("forward_batch: a sequence's logits are bit-identical alone or in a batch (models/tiny)") {
    check_batch_equals_alone("models/tiny", KernelSet::Fast, DType::F32);
}

TEST_CASE("forward_batch: bit-identical alone or in a batch (models/mha, bf16 and q8_0 cache, scalar and plain kernels)") {
    check_batch_equals_alone("models/mha", KernelSet::Fast, DType::BF16);
    check_batch_equals_alone("models/mha", KernelSet::Fast, DType::Q8_0);
    check_batch_equals_alone("models/mha", KernelSet::Scalar, DType::F32);
    check_batch_equals_alone("models/tiny", KernelSet::Plain, DType::F16);
}

// bf16dot is not exact (its activations are rounded to bf16), but it is
// deterministic: the same bits alone or in a batch, on 1 thread or all.
TEST_CASE("forward_batch: bf16dot gives the same bits alone on 1 thread as in a batch on all threads (models/tiny, bf16)") {
    if (!kernel_set_runs_here(kernel_set_info(KernelSet::BF16Dot))) {
        MESSAGE("skipped: this CPU lacks AVX512_BF16, bf16dot does not run here");
        return;
    }
    check_batch_equals_alone("models/tiny", KernelSet::BF16Dot, DType::F32, 1);
    check_batch_equals_alone("models/tiny", KernelSet::Fast, DType::F32, 1);
    kernels_init(KernelSet::Fast, 0);
}

TEST_CASE("forward_batch: a batch that needs more blocks than are free is refused before it runs") {
    REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
    Model m;
    load_model(m, "models/tiny");
    Net net;
    net_init(net, m, 1);
    KVPages pages;
    kv_pages_init(pages, m.cfg, 16, DType::F32, 8);  // 2 blocks
    std::vector<int> toks(12, 1);
    KVSeq a, b;
    BatchSeq s[2];
    s[0].tokens = s[1].tokens = toks.data();
    s[0].T = s[1].T = 12;
    KVSeq* tables[2] = {&a, &b};
    CHECK_THROWS_WITH_AS(kv_batch_reserve(pages, tables, s, 2), doctest::Contains("needs 4 more blocks, 2 are free"),
                         LanternError);
    CHECK(a.blocks.empty());
    CHECK(b.blocks.empty());
    CHECK(kv_blocks_free(pages) == 2);
    kv_batch_reserve(pages, tables, s, 1);  // one fits
    forward_batch(net, s, 1);
    CHECK(a.n_pos == 12);
    CHECK(kv_blocks_free(pages) == 0);
}

// ---------------------------------------------------------------------------
// The scheduler, driven step by step without a server.
#include "serve/scheduler.h"
#include "trace_report.h"

TEST_CASE("plan_step: decode rows first, then prompt chunks oldest first, within the row budget") {
    auto reading = [](int id, int len, int done) { SlotView v; v.busy = true, v.id = id, v.prompt_len = len, v.prefilled = done; return v; };
    SlotView decoding;
    decoding.busy = decoding.decoding = true;
    decoding.id = 1;
    // A 20-token prompt beside two decoding slots, 8 rows a step: chunks of 6, 6, 6 and 2.
    std::vector<SlotView> slots = {decoding, reading(3, 20, 0), decoding, SlotView()};
    std::vector<int> chunks;
    for (int step = 0; step < 10 && !slots[1].decoding; step++) {
        std::vector<StepRows> p = plan_step(slots, 8);
        REQUIRE(p.size() == 3);
        CHECK(p[0].slot == 0);  // decode rows first, in slot order
        CHECK(p[1].slot == 2);
        CHECK((p[0].n == 1 && p[0].logits && p[1].n == 1 && p[1].logits));
        CHECK(p[2].slot == 1);
        chunks.push_back(p[2].n);
        slots[1].prefilled += p[2].n;
        CHECK(p[2].logits == (slots[1].prefilled == 20));  // only the chunk that ends the prompt
        if (p[2].logits) slots[1].decoding = true;
    }
    CHECK(chunks == std::vector<int>{6, 6, 6, 2});
    // The oldest request first, whatever its slot; the budget runs out.
    std::vector<StepRows> p = plan_step({reading(9, 4, 0), reading(7, 4, 0), reading(8, 4, 0)}, 10);
    REQUIRE(p.size() == 3);
    CHECK((p[0].slot == 1 && p[0].n == 4 && p[0].logits));
    CHECK((p[1].slot == 2 && p[1].n == 4 && p[1].logits));
    CHECK((p[2].slot == 0 && p[2].n == 2 && !p[2].logits));
    CHECK(plan_step({SlotView(), SlotView()}, 8).empty());  // nothing to do
}

struct SchedFixture {
    Model m;
    Tokenizer tok;
    SchedFixture() {
        REQUIRE_MESSAGE(access("models/tiny/model.safetensors", F_OK) == 0, "run `make models` first");
        load_model(m, "models/tiny");
        tokenizer_load(tok, "models/tiny");
    }
};
static SchedFixture& fixture() {
    static std::unique_ptr<SchedFixture> f(new SchedFixture);
    return *f;
}

struct Outcome {
    std::string text, streamed, error;
    Finish finish = Finish::Length;
    int calls = 0;
};

static std::shared_ptr<SchedRequest> request(int id, const std::string& prompt, int n, uint32_t seed, float temp,
                                             Outcome* out, const bool* cancel = nullptr) {
    auto r = std::make_shared<SchedRequest>();
    r->id = id;
    r->prompt = tokenizer_encode(fixture().tok, apply_chat_template({{"user", prompt}}, true));
    r->gen.n_predict = n;
    r->gen.sampling.seed = seed;
    r->gen.sampling.temperature = temp;
    r->gen.sampling.top_k = 40;
    r->hooks.on_text = [out](const std::string& piece) { out->streamed += piece; return true; };
    r->cancelled = [cancel] { return cancel && *cancel; };
    r->done = [out](GenerateResult& res, const std::string& error, int) {
        out->text = res.text;
        out->finish = res.finish;
        out->error = error;
        out->calls++;
    };
    return r;
}

static std::string alone(const std::string& prompt, int n, uint32_t seed, float temp) {
    Net net;
    net_init(net, fixture().m, 512);
    Sampler s;
    SamplerParams sp;
    sp.seed = seed;
    sp.temperature = temp;
    sp.top_k = 40;
    sampler_init(s, sp);
    GenerateParams p;
    p.n_predict = n;
    return generate(net, fixture().tok, s, tokenizer_encode(fixture().tok, apply_chat_template({{"user", prompt}}, true)), 0, p).text;
}

TEST_CASE("scheduler: requests that join and leave mid-stream get the text they get alone") {
    Net net;
    net_init(net, fixture().m, 1);
    Scheduler s;
    scheduler_init(s, net, fixture().tok, 3, 16, 16, 512, 0, DType::F32);  // 16 rows a step: prompts take several
    // The scratch of the largest step (16 rows, 3 rows of logits) is made
    // before the first request, and no step has to grow it: the buffers stay where they are.
    const Config& c = fixture().m.cfg;
    CHECK(net.gate.size() >= (size_t)16 * c.intermediate);
    CHECK(net.logits.size() >= (size_t)3 * c.vocab);
    const float *gate0 = net.gate.data(), *x0 = net.x.data(), *logits0 = net.logits.data();
    std::vector<std::string> prompts = {"Hello", "Tell me a long story about the sea and the ships on it", "Why?",
                                        "Count to ten", "What is the capital of France?"};
    std::vector<int> lens = {20, 7, 30, 3, 12};
    std::vector<Outcome> out(prompts.size());
    CHECK(scheduler_submit(s, request(1, prompts[0], lens[0], 1, 0.0f, &out[0])) == "");
    CHECK(scheduler_submit(s, request(2, prompts[1], lens[1], 2, 0.9f, &out[1])) == "");
    int steps = 0, max_busy = 0;
    for (; steps < 500; steps++) {
        if (steps == 3) CHECK(scheduler_submit(s, request(3, prompts[2], lens[2], 3, 0.8f, &out[2])) == "");
        if (steps == 5) CHECK(scheduler_submit(s, request(4, prompts[3], lens[3], 4, 0.0f, &out[3])) == "");
        if (steps == 6) CHECK(scheduler_submit(s, request(5, prompts[4], lens[4], 5, 1.0f, &out[4])) == "");
        bool ran = scheduler_step(s);
        max_busy = std::max(max_busy, scheduler_stats(s).busy);
        if (!ran && steps > 6) break;
    }
    CHECK(max_busy == 3);  // three slots, five requests: some waited
    CHECK(net.gate.data() == gate0);
    CHECK(net.x.data() == x0);
    CHECK(net.logits.data() == logits0);
    for (size_t i = 0; i < prompts.size(); i++) {
        INFO("request " << i + 1);
        CHECK(out[i].calls == 1);
        CHECK(out[i].error == "");
        CHECK(out[i].streamed == out[i].text);
        CHECK(out[i].text == alone(prompts[i], lens[i], (uint32_t)i + 1, i == 0 || i == 3 ? 0.0f : i == 1 ? 0.9f : i == 2 ? 0.8f : 1.0f));
    }
    SchedStats st = scheduler_stats(s);
    CHECK(st.blocks_used == 0);  // every block came back
    CHECK(st.busy == 0);
    CHECK(st.requests_done == 5);
    CHECK(kv_blocks_free(s.pages) == s.pages.n_blocks);
}

TEST_CASE("scheduler: with a trace recording, each step records who ran, where, and the token each one got") {
    Net net;
    net_init(net, fixture().m, 1);
    Scheduler s;
    scheduler_init(s, net, fixture().tok, 2, 8, 16, 512, 0, DType::F32);  // 8 rows a step: prompts take several
    TraceOptions opt;
    opt.json_path = "build/test_sched_trace.json";
    REQUIRE(trace_start(opt, "test", true));
    CHECK_FALSE(g_probe_forward);  // a batch is recorded by steps, not by probing every forward call
    std::vector<Outcome> out(3);
    std::vector<std::shared_ptr<SchedRequest>> reqs = {request(1, "Hello there", 6, 1, 0.0f, &out[0]),
                                                       request(2, "Why?", 9, 2, 0.9f, &out[1]),
                                                       request(3, "Count to ten", 4, 3, 0.0f, &out[2])};
    CHECK(scheduler_submit(s, reqs[0]) == "");
    CHECK(scheduler_submit(s, reqs[1]) == "");
    int steps = 0;
    for (; steps < 200; steps++) {
        if (steps == 4) CHECK(scheduler_submit(s, reqs[2]) == "");  // waits for a slot
        if (!scheduler_step(s) && steps > 4) break;
    }
    std::vector<StepRecord> rec = g_rec.steps;
    trace_reset();
    CHECK((int)rec.size() == steps);
    bool two = false;
    for (size_t k = 0; k < rec.size(); k++) {
        two = two || rec[k].seqs.size() >= 2;
        CHECK(rec[k].t1_us >= rec[k].t0_us);
        int rows = 0;
        for (const StepSeq& q : rec[k].seqs) rows += q.T;
        CHECK(rows <= 8);
    }
    CHECK(two);
    for (int i = 0; i < 3; i++) {
        INFO("request " << i + 1);
        int next_pos = -1, first_step = -1;
        std::string text;
        const char* left = nullptr;
        for (size_t k = 0; k < rec.size(); k++)
            for (const StepSeq& q : rec[k].seqs) {
                if (q.request != i + 1) continue;
                if (first_step < 0) first_step = (int)k;
                CHECK(left == nullptr);  // nothing runs after it left
                if (next_pos >= 0) CHECK(q.pos == next_pos);  // positions follow each other
                next_pos = q.pos + q.T;
                CHECK(q.blocks == kv_blocks_for(s.pages, q.pos + q.T));  // its table holds what it wrote
                CHECK(q.prefill == (q.pos + q.T <= (int)reqs[i]->prompt.size()));
                bool stop = q.left && std::string(q.left) == "stop";  // the stop token is not part of the text
                if (q.token >= 0 && !stop) text += token_bytes(fixture().tok, q.token);
                left = q.left;
            }
        CHECK(text == out[i].text);  // every token it got, in the step that sampled it
        REQUIRE(left != nullptr);
        CHECK(std::string(left) == finish_name(out[i].finish));
        if (i == 2) CHECK(first_step > 4);  // it joined later: its first step is later
    }
}

static std::shared_ptr<SchedRequest> chat_request(int id, const std::vector<ChatMessage>& chat, int n, Outcome* out) {
    auto r = request(id, "", n, 1, 0.0f, out);
    r->prompt = tokenizer_encode(fixture().tok, apply_chat_template(chat, true));
    return r;
}

TEST_CASE("scheduler: prompts that begin like earlier ones share their blocks and get the text they get alone") {
    Net net;
    net_init(net, fixture().m, 1);
    Scheduler s;
    scheduler_init(s, net, fixture().tok, 2, 32, 8, 512, 0, DType::F32);
    std::string sys = "You are a careful assistant. Answer in one short sentence, and never make up a fact you do not know.";
    std::vector<ChatMessage> first = {{"system", sys}, {"user", "Who was Moses?"}};
    Outcome a, b, c, d;
    CHECK(scheduler_submit(s, chat_request(1, first, 12, &a)) == "");
    for (int i = 0; i < 200 && scheduler_step(s); i++) {}
    REQUIRE(a.calls == 1);
    CHECK(scheduler_stats(s).prompt_tokens_reused == 0);
    CHECK(scheduler_stats(s).blocks_cached > 0);
    // The same system prompt, another question; and the next turn of the first chat.
    std::vector<ChatMessage> other = {{"system", sys}, {"user", "Who was Aaron?"}};
    std::vector<ChatMessage> next = first;
    next.push_back({"assistant", a.text});
    next.push_back({"user", "And his brother?"});
    CHECK(scheduler_submit(s, chat_request(2, other, 12, &b)) == "");
    CHECK(scheduler_submit(s, chat_request(3, next, 12, &c)) == "");
    CHECK(scheduler_submit(s, chat_request(4, other, 12, &d)) == "");  // the same prompt as b, while b runs
    for (int i = 0; i < 400 && scheduler_step(s); i++) {}
    SchedStats st = scheduler_stats(s);
    int sys_tokens = (int)tokenizer_encode(fixture().tok, apply_chat_template({{"system", sys}}, false)).size();
    CHECK(st.prompt_tokens_reused >= 3 * (sys_tokens / s.pages.block) * s.pages.block);
    CHECK(st.prompt_tokens_reused + st.prompt_tokens ==
          (long long)(tokenizer_encode(fixture().tok, apply_chat_template(first, true)).size() +
                      2 * tokenizer_encode(fixture().tok, apply_chat_template(other, true)).size() +
                      tokenizer_encode(fixture().tok, apply_chat_template(next, true)).size()));
    // The answers are those of a fresh cache, whatever was shared.
    auto fresh = [](const std::vector<ChatMessage>& chat) {
        Net one;
        net_init(one, fixture().m, 512);
        Sampler sm;
        SamplerParams sp;
        sp.seed = 1;
        sp.temperature = 0;
        sp.top_k = 40;
        sampler_init(sm, sp);
        GenerateParams p;
        p.n_predict = 12;
        return generate(one, fixture().tok, sm, tokenizer_encode(fixture().tok, apply_chat_template(chat, true)), 0, p).text;
    };
    CHECK(a.text == fresh(first));
    CHECK(b.text == fresh(other));
    CHECK(d.text == b.text);
    CHECK(c.text == fresh(next));
    CHECK(st.blocks_used == 0);
    CHECK(kv_blocks_free(s.pages) == s.pages.n_blocks);
}

TEST_CASE("scheduler: a full queue, a request too large for the pool, one waiting for blocks, a cancelled one") {
    Net net;
    net_init(net, fixture().m, 1);
    Scheduler s;
    // 2 slots, a pool of 64 positions (4 blocks of 16), at most 2 waiting.
    scheduler_init(s, net, fixture().tok, 2, 64, 2, 512, 64, DType::F32);
    Outcome big, a, b, c, d;
    CHECK(scheduler_submit(s, request(1, "Hi", 100, 1, 0, &big)) == "too_large");  // ~20 prompt + 100 > 64
    CHECK(scheduler_submit(s, request(2, "Hi", 20, 1, 0, &a)) == "");  // the chat prompt + 20: the whole pool
    scheduler_step(s);  // a joins
    bool cancel_b = false;
    CHECK(scheduler_submit(s, request(3, "Hi", 20, 1, 0, &b, &cancel_b)) == "");
    CHECK(scheduler_submit(s, request(4, "Hi", 3, 1, 0, &c)) == "");
    CHECK(scheduler_submit(s, request(5, "Hi", 3, 1, 0, &d)) == "queue_full");
    scheduler_step(s);
    SchedStats st = scheduler_stats(s);
    CHECK(st.busy == 1);     // a slot is free, but b would need blocks promised to a: it waits
    CHECK(st.waiting == 2);
    cancel_b = true;         // b's client leaves while it waits
    for (int i = 0; i < 200 && scheduler_step(s); i++) {}
    CHECK(a.calls == 1);
    CHECK(a.error == "");
    CHECK(b.calls == 1);
    CHECK(b.finish == Finish::Aborted);
    CHECK(b.text == "");
    CHECK(c.calls == 1);
    CHECK(c.text == alone("Hi", 3, 1, 0));
    CHECK(scheduler_stats(s).blocks_used == 0);
}

TEST_CASE("scheduler: a client that leaves mid-answer frees its slot and blocks; shutdown ends the rest with 503") {
    Net net;
    net_init(net, fixture().m, 1);
    Scheduler s;
    scheduler_init(s, net, fixture().tok, 2, 32, 4, 512, 0, DType::F32);
    Outcome a, b, c;
    bool cancel_a = false;
    CHECK(scheduler_submit(s, request(1, "Hello there", 200, 1, 0, &a, &cancel_a)) == "");
    CHECK(scheduler_submit(s, request(2, "Hello there", 200, 2, 0, &b)) == "");
    CHECK(scheduler_submit(s, request(3, "Hello there", 200, 3, 0, &c)) == "");
    for (int i = 0; i < 5; i++) scheduler_step(s);  // a and b decode, c waits
    CHECK(scheduler_stats(s).busy == 2);
    cancel_a = true;
    scheduler_step(s);
    CHECK(a.calls == 1);
    CHECK(a.finish == Finish::Aborted);
    CHECK(scheduler_stats(s).busy == 2);  // c took a's slot at once
    scheduler_stop(s);
    scheduler_run(s);  // returns at once: everything left ends
    CHECK(b.calls == 1);
    CHECK(b.error == "the server is shutting down");
    CHECK(c.calls == 1);
    CHECK(c.error == "the server is shutting down");
    CHECK(scheduler_stats(s).blocks_used == 0);
    CHECK(scheduler_submit(s, request(4, "Hi", 3, 1, 0, &a)) == "stopping");
}
