// server.cpp — ./run serve: the model behind an OpenAI-compatible HTTP API.
//
//   client ──HTTP──▶ handler thread (one per connection)
//                      JSON → chat template → token ids → checks
//                      │  a Job joins the queue (full: 503)
//                      ▼
//                    model thread: the scheduler (scheduler.cpp) runs up to
//                      --parallel requests together, one batched forward per
//                      step; each has its own KV pages, sampler and seed
//                      │  pieces of text
//                      ▼
//                    handler thread: one JSON answer, or a server-sent event
//                      ("data: {...}") per piece, then "data: [DONE]"
//
// Why batch: a decode step is bound by reading the weights, and a batch of
// sequences reads them once for all. Why answers stay reproducible: a
// sequence's logits are the same bits alone or in a batch, so a request's
// text depends on its own settings and seed, never on who else is running.
//
// This file is the routing (which path does what) and the bridge between a
// handler thread and the model thread: the Job, the queue's callbacks, the
// wait for an answer. The HTTP under it, with its limits and deadlines, is
// server_http.cpp; the API's JSON in and out, server_api.cpp. See
// book/13-serving.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include "cuda/net_cuda.h"
#include "logging.h"
#include "cli.h"
#include "generate.h"
#include "serve/scheduler.h"
#include "gguf/quants.h"
#include "serve/server_api.h"
#include "serve/server_http.h"
#include "trace_report.h"

using json = ApiJson;

// The flags are cli_flags.cpp's (groups serve, sampling, engine, report, output):
// Options holds host, port, queue_limit, parallel, batch_tokens, kv_tokens,
// the engine options and the trace files.

// ---------------------------------------------------------------------------
// A request, parsed and tokenized (server_api.h's Completion), and what the
// model thread sends back.
//
// The handler thread fills in the request and never touches the model. The
// model thread appends text to `unsent` as generate() makes it final, keeps
// each token's probabilities in `tokens` when logprobs were asked for, and
// sets `result` and `done` at the end; both sides hold `mu`, and `cv` wakes
// the handler. `cancelled` goes the other way: the handler sets it when the
// client is gone, and the model thread stops at its next piece of text.
struct Job : Completion {
    std::mutex mu;
    std::condition_variable cv;
    std::string unsent;  // text made but not yet sent
    size_t tokens_sent = 0;          // streaming: how many of `tokens` went out
    bool done = false;
    std::string error;   // no answer (not the client's fault)
    int error_status = 500;
    std::atomic<bool> cancelled{false};
};

// The model (engine_load's Engine: model, tokenizer, and a Net kept for its
// scratch: the sequences' caches are the scheduler's pages) and the
// scheduler in front of it.
struct Server : Engine {
    Options opt;
    Scheduler sched;
    std::vector<int> stop_ids;  // stop_token_ids: not part of an answer's logprobs
    std::string model_id;  // what /v1/models lists and answers carry
    RequestDefaults defaults;  // what a request's missing fields become (serve's flags over generation_config.json)
    int n_ctx = 0;         // most positions of one sequence, fixed at start: handlers read this one
    long started = 0;
    std::atomic<int> next_id{0};
};

// Everything that can be wrong with a request is found here, before it
// waits in the queue and before a stream's "200 OK" goes out: the body,
// then the prompt's length in tokens (server_api.cpp).
static std::shared_ptr<Job> parse_request(const Server& e, const std::string& body, bool chat) {
    auto job = std::make_shared<Job>();
    job->req = parse_generation_request(body, chat, e.defaults, std::random_device()());
    job->prompt = prompt_tokens(job->req, e.tok, e.n_ctx, ctx_hint(e.n_ctx, e.model.cfg.max_pos));
    return job;
}

// ---------------------------------------------------------------------------
// The queue and the model thread.

// The scheduler does the work; these are its callbacks, which talk to the
// handler thread through the Job. Returns "" or the scheduler's reason for
// refusing (scheduler_submit).
static void finish_job(Job& job, GenerateResult r, const std::string& error, int status) {
    std::lock_guard<std::mutex> lk(job.mu);
    job.result = std::move(r);
    job.error = error;
    job.error_status = status;
    job.done = true;
    job.cv.notify_all();
}

static std::string submit(Server& e, const std::shared_ptr<Job>& job) {
    auto r = std::make_shared<SchedRequest>();
    r->id = job->id;
    r->prompt = job->prompt;
    r->gen = job->req.gen;
    r->hooks.on_text = [job](const std::string& piece) {
        std::lock_guard<std::mutex> lk(job->mu);
        job->unsent += piece;
        job->cv.notify_all();
        return !job->cancelled;
    };
    if (job->req.top_logprobs >= 0)
        r->hooks.on_token = [&e, job](int token, const SampleInfo& info) {
            if (std::count(e.stop_ids.begin(), e.stop_ids.end(), token)) return;
            std::lock_guard<std::mutex> lk(job->mu);
            job->tokens.push_back(info);
        };
    r->cancelled = [job] { return job->cancelled.load(); };
    r->done = [job](GenerateResult& res, const std::string& error, int status) {
        finish_job(*job, std::move(res), error, status);
    };
    return scheduler_submit(e.sched, r);
}

static void note_tokens(const Job& job, const char* how) {
    note_request(strprintf(" | %zu prompt + %zu completion tokens (%s)", job.prompt.size(), job.result.ids.size(), how));
}

// Server-sent events: the response stays open and each piece of text goes
// out as "data: <chunk JSON>\n\n" the moment the model thread makes it.
// httplib calls the provider once, on this handler thread, after the
// headers; a failed write means the client is gone, and `cancelled` tells
// the model thread to stop.
static void stream_answer(Server& e, const std::shared_ptr<Job>& job, httplib::Response& res) {
    res.set_header("Cache-Control", "no-cache");
    auto provider = [&e, job](size_t, httplib::DataSink& sink) {
        auto send = [&](const std::string& data) {
            std::string event = "data: " + data + "\n\n";
            return sink.write(event.data(), event.size());
        };
        bool ok = !job->req.chat || send(api_dump(chunk_json(*job, e.model_id, {{"role", "assistant"}, {"content", ""}}, nullptr)));
        for (bool done = false; ok && !done;) {
            std::string piece;
            json logprobs;  // the tokens sampled since the last piece
            {
                std::unique_lock<std::mutex> lk(job->mu);
                while (!job->cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return !job->unsent.empty() || job->done; }))
                    if (client_gone()) break;  // gone while waiting in the queue
                if (job->unsent.empty() && !job->done) {
                    ok = false;
                    break;
                }
                piece.swap(job->unsent);
                done = job->done;
                if (job->req.top_logprobs >= 0 && !piece.empty()) {
                    logprobs = logprobs_json(*job, e.tok, job->tokens_sent, job->tokens.size());
                    job->tokens_sent = job->tokens.size();
                }
            }
            if (!piece.empty()) ok = send(api_dump(chunk_json(*job, e.model_id, {{"content", piece}}, nullptr, logprobs)));
        }
        if (!ok) {
            job->cancelled = true;
            note_request(" | the client went away");
            return false;
        }
        if (!job->error.empty()) {
            send(api_dump(error_json({500, job->error, "", ""})));
        } else {
            send(api_dump(chunk_json(*job, e.model_id, json::object(), finish_reason(job->result.finish))));
            if (job->req.include_usage) send(api_dump(usage_chunk_json(*job, e.model_id)));
        }
        send("[DONE]");
        sink.done();
        note_tokens(*job, job->error.empty() ? finish_name(job->result.finish) : "error");
        return true;
    };
    // Called when the response is dropped; not ok: the provider never ran
    // to the end, so the model thread need not either.
    auto released = [job](bool ok) {
        if (!ok) job->cancelled = true;
    };
    res.set_chunked_content_provider("text/event-stream", provider, released);
}

// POST /v1/chat/completions and POST /v1/completions.
static void handle_generate(Server& e, const std::string& body, httplib::Response& res, bool chat) {
    std::shared_ptr<Job> job;
    try {
        job = parse_request(e, body, chat);
    } catch (const ApiError& err) {
        return send_error(res, err);
    }
    job->id = ++e.next_id;
    job->created = (long)time(nullptr);
    std::string refused = submit(e, job);
    if (refused == "too_large")
        return send_error(res, {400, strprintf("the prompt (%zu tokens) plus max_tokens (%d) need more KV cache than the "
                                               "server holds (%d positions; lower max_tokens, or start it with a larger --kv-tokens)",
                                               job->prompt.size(), job->req.gen.n_predict, e.sched.pages.n_blocks * e.sched.pages.block),
                                "max_tokens", "kv_cache_too_small"});
    if (refused == "stopping") return send_error(res, {503, "the server is shutting down", "", "shutting_down"});
    if (!refused.empty())
        return send_error(res, {503, strprintf("the server is busy: %d requests are already waiting; try again later",
                                            e.opt.queue_limit), "", "queue_full"});
    if (job->req.stream) return stream_answer(e, job, res);
    // While the job waits and runs, look every 100 ms whether the client is
    // still there: one that has gone gets no answer, so its job is cancelled
    // (the model thread stops at the next piece of text, or skips it).
    std::unique_lock<std::mutex> lk(job->mu);
    while (!job->cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return job->done; })) {
        if (client_gone()) {
            job->cancelled = true;
            close_connection();
            note_request(" | the client went away");
            return;
        }
    }
    if (!job->error.empty()) return send_error(res, {job->error_status, job->error, "", ""});
    res.set_content(api_dump(answer_json(*job, e.model_id, e.tok)), "application/json");
    note_tokens(*job, finish_name(job->result.finish));
}

// Which path does what. What no path here answers, and what the
// transport refuses before routing, is HardenedServer's (server_http.cpp).
static void route(httplib::Server& svr, Server& e) {
    using httplib::Request;
    using httplib::Response;
    // The body is read as JSON whatever Content-Type says (curl -d says
    // form-urlencoded). Taking it through a ContentReader keeps httplib from
    // parsing it as a form, which it would refuse past 8 KiB.
    auto generate_route = [&e](bool chat) {
        return [&e, chat](const Request&, Response& res, const httplib::ContentReader& read) {
            std::string body;
            bool whole = read([&](const char* data, size_t n) {
                body.append(data, n);
                return true;
            });
            if (!whole) {  // past the body limit (httplib set 413), or the client left
                if (res.status < 400) res.status = 400;
                return;  // the transport's error page writes the JSON
            }
            handle_generate(e, body, res, chat);
        };
    };
    svr.Post("/v1/chat/completions", generate_route(true));
    svr.Post("/v1/completions", generate_route(false));
    svr.Get("/v1/models", [&e](const Request&, Response& res) {
        res.set_content(api_dump(models_json(e.model_id, e.started)), "application/json");
    });
    svr.Get("/props", [&e](const Request&, Response& res) {
        res.set_content(api_dump(props_json(e.model_id, e.defaults)), "application/json");
    });
    // The page to watch it: a chat with each token shaded by its
    // probability, and the scheduler live (serve_page.html, built in).
    static const char page[] =
#include "serve_page.inc"
        ;
    svr.Get("/", [](const Request&, Response& res) { res.set_content(page, "text/html; charset=utf-8"); });
    svr.Get("/health", [&e](const Request&, Response& res) {
        SchedStats st = scheduler_stats(e.sched);
        res.set_content(api_dump(json{{"status", "ok"}, {"model", e.model_id}, {"waiting", st.waiting},
                                  {"slots", st.slots}, {"slots_busy", st.busy}, {"slot_state", st.slot_state},
                                  {"kv_blocks_used", st.blocks_used}, {"kv_blocks_total", st.blocks_total},
                                  {"kv_blocks_cached", st.blocks_cached}, {"prompt_tokens_reused", st.prompt_tokens_reused},
                                  {"kv_block_tokens", st.block_tokens}, {"tokens_per_second", st.tokens_per_s}}),
                        "application/json");
    });
    // Prometheus text format: one "name value" line per number.
    svr.Get("/metrics", [&e](const Request&, Response& res) {
        SchedStats st = scheduler_stats(e.sched);
        std::string m;
        auto metric = [&m](const char* name, const char* type, const char* help, double v) {
            m += strprintf("# HELP lantern_%s %s\n# TYPE lantern_%s %s\nlantern_%s %.10g\n", name, help, name, type, name, v);
        };
        metric("slots", "gauge", "requests that can run together (--parallel)", st.slots);
        metric("slots_busy", "gauge", "requests running now", st.busy);
        metric("slots_prefilling", "gauge", "running requests still reading their prompt", st.prefilling);
        metric("slots_decoding", "gauge", "running requests generating", st.decoding);
        metric("queue_length", "gauge", "requests waiting for a slot", st.waiting);
        metric("kv_blocks_used", "gauge", "KV cache blocks holding a sequence's positions", st.blocks_used);
        metric("kv_blocks_free", "gauge", "KV cache blocks free", st.blocks_total - st.blocks_used);
        metric("kv_blocks_cached", "gauge", "free KV cache blocks that still hold a prefix a prompt may reuse", st.blocks_cached);
        metric("kv_block_tokens", "gauge", "positions per KV cache block", st.block_tokens);
        metric("tokens_per_second", "gauge", "generated tokens per second, last seconds", st.tokens_per_s);
        metric("steps_total", "counter", "batched forward steps", (double)st.steps);
        metric("tokens_generated_total", "counter", "tokens sampled", (double)st.tokens_generated);
        metric("prompt_tokens_total", "counter", "prompt tokens prefilled", (double)st.prompt_tokens);
        metric("prompt_tokens_reused_total", "counter", "prompt tokens whose KV blocks were shared, not prefilled",
               (double)st.prompt_tokens_reused);
        metric("requests_finished_total", "counter", "requests that left the batch", (double)st.requests_done);
        res.set_content(m, "text/plain; version=0.0.4");
    });
}

// ---------------------------------------------------------------------------
// ./run serve [MODEL] [flags]
int cmd_serve(int argc, char** argv) {
    Server e;
    e.opt = parse_command("serve", argc, argv);
    const Options& o = e.opt;
    if (!o.engine.ablate.empty()) fail("--ablate: the server shares one network among its requests; ablate with ./run, chat, fwd or lens");
    // Ctrl-C and kill are taken by one thread with sigwait, not by a signal
    // handler: it can then lock and wake like any other thread. The mask is
    // set before any thread starts (OpenMP's too), so every thread inherits it.
    // A background job of a script starts with SIGINT ignored, and an
    // ignored signal is dropped before sigwait could see it.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    signal(SIGPIPE, SIG_IGN);  // a closed socket is a failed write, not the end of the process

    device_use_batched(o.engine.device);
    // --report and --trace-json record the whole run, every scheduler step
    // (scheduler.cpp), and are written when the server stops. A file that
    // cannot be written is found now, not after hours of serving.
    for (const std::string& path : {o.trace.report_path, o.trace.json_path}) {
        if (path.empty()) continue;
        FILE* f = fopen(path.c_str(), "a");
        if (!f) fail("%s: cannot write (%s)", path.c_str(), strerror(errno));
        fclose(f);
    }
    trace_start(o.trace, command_line("./run serve", argc, argv), true);
    // The model and the tokenizer; no KV cache of engine_load's: each
    // sequence's cache is a block table in the scheduler's pages.
    double t_load = trace_now_us();
    engine_load(e, o.engine, ENGINE_MODEL | ENGINE_TOKENIZER);
    trace_span("load", t_load);
    trace_set_model(e.model, e.tok);
    e.n_ctx = o.engine.ctx ? o.engine.ctx : std::min(4096, e.model.cfg.max_pos);
    if (e.n_ctx > e.model.cfg.max_pos) fail("--ctx %d exceeds the model's max_position_embeddings (%d)", e.n_ctx, e.model.cfg.max_pos);
    net_init(e.net, e.model, 1);  // scratch only: the sequences' caches are the scheduler's pages
    scheduler_init(e.sched, e.net, e.tok, o.parallel, o.batch_tokens, o.queue_limit, e.n_ctx, o.kv_tokens, o.engine.kv_type);
    e.stop_ids = stop_token_ids(e.tok, e.model.cfg);
    e.model_id = e.model.dir;
    // A request may name the model by its id or by the folder's (or file's)
    // own name: "models/tiny" or "tiny".
    e.defaults.gen = o.gen;
    e.defaults.fixed_seed = o.seed_given;
    e.defaults.models = {e.model_id};
    e.defaults.chat = ChatFormat{e.model.cfg.arch->chat, true};
    std::string base = e.model_id;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    base = base.substr(base.find_last_of('/') + 1);
    if (base != e.model_id) e.defaults.models.push_back(base);
    e.started = (long)time(nullptr);

    HardenedServer svr;
    route(svr, e);
    int port = o.port == 0 ? svr.bind_to_any_port(o.host) : (svr.bind_to_port(o.host, o.port) ? o.port : -1);
    if (port < 0) fail("serve: cannot listen on %s:%d (in use, or not an address of this machine)", o.host.c_str(), o.port);
    svr.raise_backlog();
    std::thread http([&svr] { svr.listen_after_bind(); });
    std::thread waiter([&e, stop_signals] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        LOGI(CAT_SERVER, "stopping (%s)", sig == SIGINT ? "SIGINT" : "SIGTERM");
        scheduler_stop(e.sched);
    });
    LOGI(CAT_SERVER, "listening on http://%s:%d (model %s, %d positions of context, %d slots, %d KV blocks of %d, queue %d)",
         o.host.c_str(), port, e.model_id.c_str(), e.n_ctx, o.parallel, e.sched.pages.n_blocks, e.sched.pages.block,
         o.queue_limit);
    scheduler_run(e.sched);  // this thread is the model thread, where kernels_init set the thread count
    svr.stop();
    http.join();
    waiter.join();
    trace_finish("", "");  // --report, --trace-json: every step of the run
    return 0;
}
