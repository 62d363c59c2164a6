// server.cpp — ./run serve: the model behind an OpenAI-compatible HTTP API.
//
//   client ──HTTP──▶ handler thread (one per connection, from a pool)
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
// The HTTP parsing, keep-alive and chunked transfer are cpp-httplib's
// (Debian's libcpp-httplib-dev). See book/12-serving.md.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdarg>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>
#include <arpa/inet.h>
#include <poll.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include "net_cuda.h"
#include "logging.h"
#include "cli.h"
#include "generate.h"
#include "scheduler.h"
#include "quants.h"
#include "server_request.h"
#include "trace_report.h"

using json = nlohmann::ordered_json;  // keys stay in the order written, as in the API docs

// The flags are cli.cpp's (groups serve, sampling, engine, report, output):
// Options holds host, port, queue_limit, parallel, batch_tokens, kv_tokens,
// the engine options and the trace files.
const size_t MAX_BODY_BYTES = 1 << 20;  // a request body past this gets 413


// Invalid UTF-8 can reach a JSON string only through an error message that
// quotes the client's bytes; `replace` turns it into U+FFFD instead of
// throwing.
static std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// ---------------------------------------------------------------------------
// Errors, the OpenAI way: a 4xx or 5xx status and
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}
// Parsing a request throws ApiError; the handler turns it into the answer.
// (ApiError is in server_request.h.)
[[noreturn]] static void bad_request(const std::string& param, const std::string& code, const std::string& message) {
    throw ApiError{400, message, param, code};
}

static void send_error(httplib::Response& res, const ApiError& e) {
    json err = {{"message", e.message},
                {"type", e.status >= 500 ? "server_error" : "invalid_request_error"},
                {"param", e.param.empty() ? json(nullptr) : json(e.param)},
                {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
    res.status = e.status;
    res.set_content(dump(json{{"error", err}}), "application/json");
}

// ---------------------------------------------------------------------------
// A request, parsed and tokenized, and what the model thread sends back.
//
// The handler thread fills the first part and never touches the model. The
// model thread appends text to `unsent` as generate() makes it final and
// sets `done` at the end; both sides hold `mu`, and `cv` wakes the handler.
// `cancelled` goes the other way: the handler sets it when the client is
// gone, and the model thread stops at its next piece of text.
struct Job {
    int id = 0;
    bool chat = true;                 // /v1/chat/completions or /v1/completions
    bool stream = false, include_usage = false;
    long created = 0;                 // Unix time, for the "created" fields
    std::string prompt_text;          // after the chat template
    std::vector<int> prompt;          // its token ids
    GenerateParams gen;
    int top_logprobs = -1;            // -1: no logprobs; else how many alternatives per token (0-5)

    std::mutex mu;
    std::condition_variable cv;
    std::string unsent;  // text made but not yet sent
    std::vector<SampleInfo> tokens;  // logprobs: every kept token's probabilities
    size_t tokens_sent = 0;          // streaming: how many of them went out
    bool done = false;
    GenerateResult result;
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
// waits in the queue and before a stream's "200 OK" goes out: the body by
// server_request.cpp, then the prompt's length in tokens.
static std::shared_ptr<Job> parse_request(const Server& e, const std::string& body, bool chat) {
    GenerationRequest r = parse_generation_request(body, chat, e.defaults, std::random_device()());
    auto job = std::make_shared<Job>();
    job->chat = r.chat;
    job->stream = r.stream;
    job->include_usage = r.include_usage;
    job->prompt_text = std::move(r.prompt_text);
    job->gen = std::move(r.gen);
    job->top_logprobs = r.top_logprobs;
    const char* where = chat ? "messages" : "prompt";
    try {
        job->prompt = tokenizer_encode(e.tok, job->prompt_text);
    } catch (const LanternError& ex) {
        bad_request(where, "invalid_value", ex.what());
    }
    if (job->prompt.empty()) bad_request(where, "invalid_value", "the prompt is empty");
    if ((int)job->prompt.size() >= e.n_ctx)
        bad_request(where, "context_length_exceeded",
                    strprintf("the prompt is %zu tokens; the context holds %d (start the server with a larger --ctx)",
                           job->prompt.size(), e.n_ctx));
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
    r->gen = job->gen;
    r->hooks.on_text = [job](const std::string& piece) {
        std::lock_guard<std::mutex> lk(job->mu);
        job->unsent += piece;
        job->cv.notify_all();
        return !job->cancelled;
    };
    if (job->top_logprobs >= 0)
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

// ---------------------------------------------------------------------------
// Connections. cpp-httplib times each read (5 s), not the request: a client
// that sends one header line every 2 s holds its thread for ever, nobody
// counts headers, and with a fixed pool of threads twenty such clients keep
// /health from ever being read. So each connection runs through
// HardenedServer's loop below instead of httplib's: the same request parsing
// and routing (httplib's process_request), over a Stream that enforces
//   - a deadline for the whole request head, and another for the body
//     (408 when missed), whatever the pace of the single reads;
//   - at most MAX_HEAD_BYTES of request line and headers (431 past them);
// and every connection gets its own thread, up to MAX_CONNECTIONS open at
// once (past that: 503 and close), separate from the generation queue.
// The limit that remains: a client holding MAX_CONNECTIONS connections
// makes /health wait, for at most HEAD_DEADLINE_S per connection it holds
// without sending a request (tests/check_hostile_server.sh shows both).
const int MAX_CONNECTIONS = 128;
const int HEAD_DEADLINE_S = 10;        // request line + headers
const int BODY_DEADLINE_S = 60;        // the body, after the head
const int WRITE_TIMEOUT_S = 10;        // one write to a client that does not read
const int KEEP_ALIVE_S = 5, KEEP_ALIVE_MAX = 100;
const size_t MAX_HEAD_BYTES = 32 << 10;
const size_t MAX_HEADERS = 100;

// This connection, for the handlers that run on its thread.
struct Connection {
    int sock = -1;
    std::chrono::steady_clock::time_point deadline;  // for every read
    bool in_head = true;  // until the pre-routing handler sees the headers
    size_t head_bytes = 0;
    int refused = 0;      // 408 or 431: why reading the request failed
    bool close = false;   // no further request on this connection
};
static thread_local Connection* t_conn = nullptr;

// Waits until `sock` is readable (POLLIN) or writable (POLLOUT), at most
// until `until`. False on timeout or error.
static bool wait_socket(int sock, short events, std::chrono::steady_clock::time_point until) {
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now()).count();
        if (left <= 0) return false;
        pollfd p{sock, events, 0};
        int r = poll(&p, 1, (int)std::min<long long>(left, 1000));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
    }
}

// True when the client has closed its end (or the socket failed). Bytes
// waiting to be read mean it is still there.
static bool client_gone(int sock) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char c;
    ssize_t n = recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void socket_address(int sock, bool peer, std::string& ip, int& port) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    ip.clear();
    port = 0;
    if ((peer ? getpeername(sock, (sockaddr*)&a, &len) : getsockname(sock, (sockaddr*)&a, &len)) != 0) return;
    char buf[INET6_ADDRSTRLEN] = "";
    if (a.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((sockaddr_in*)&a)->sin_addr, buf, sizeof buf);
        port = ntohs(((sockaddr_in*)&a)->sin_port);
    } else if (a.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((sockaddr_in6*)&a)->sin6_addr, buf, sizeof buf);
        port = ntohs(((sockaddr_in6*)&a)->sin6_port);
    }
    ip = buf;
}

// httplib reads the head one byte at a time, so reads come from a buffer.
class DeadlineStream : public httplib::Stream {
public:
    explicit DeadlineStream(Connection& c) : c_(c) {}
    bool buffered() const { return at_ < len_; }
    bool is_readable() const override { return buffered() || wait_socket(c_.sock, POLLIN, c_.deadline); }
    bool is_writable() const override {
        return wait_socket(c_.sock, POLLOUT, std::chrono::steady_clock::now() + std::chrono::seconds(WRITE_TIMEOUT_S)) &&
               !client_gone(c_.sock);
    }
    ssize_t read(char* ptr, size_t size) override {
        if (!buffered()) {
            if (!wait_socket(c_.sock, POLLIN, c_.deadline)) {
                c_.refused = 408;
                return -1;
            }
            ssize_t n = recv(c_.sock, buf_, sizeof buf_, 0);
            if (n <= 0) return -1;
            at_ = 0;
            len_ = (size_t)n;
        }
        size_t n = std::min(size, len_ - at_);
        if (c_.in_head && (c_.head_bytes += n) > MAX_HEAD_BYTES) {
            c_.refused = 431;
            return -1;
        }
        memcpy(ptr, buf_ + at_, n);
        at_ += n;
        return (ssize_t)n;
    }
    ssize_t write(const char* ptr, size_t size) override {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(WRITE_TIMEOUT_S);
        size_t done = 0;
        while (done < size) {
            if (!wait_socket(c_.sock, POLLOUT, until)) return -1;
            ssize_t n = send(c_.sock, ptr + done, size - done, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return -1;
            done += (size_t)n;
        }
        return (ssize_t)size;
    }
    void get_remote_ip_and_port(std::string& ip, int& port) const override { socket_address(c_.sock, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { socket_address(c_.sock, false, ip, port); }
    socket_t socket() const override { return c_.sock; }

private:
    Connection& c_;
    char buf_[4096];
    size_t at_ = 0, len_ = 0;
};

// One thread per connection, so that no connection waits for another's
// thread; the count is the connection limit, kept here on the accepting
// thread so that connections are counted in the order they came, and lets
// shutdown wait for the last one. A connection past the limit is answered
// 503 right here (t_refuse), which takes no time.
static thread_local bool t_refuse = false;

struct ConnectionThreads : httplib::TaskQueue {
    std::mutex mu;
    std::condition_variable cv;
    int running = 0;
    void enqueue(std::function<void()> fn) override {
        {
            std::lock_guard<std::mutex> lk(mu);
            if (running >= MAX_CONNECTIONS) {
                t_refuse = true;
                fn();
                t_refuse = false;
                return;
            }
            running++;
        }
        std::thread([this, fn] {
            fn();
            std::lock_guard<std::mutex> lk(mu);
            running--;
            cv.notify_all();
        }).detach();
    }
    void shutdown() override {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait(lk, [&] { return running == 0; });
    }
};

class HardenedServer : public httplib::Server {
public:
    // httplib listens with a backlog of 5 connections not yet accepted; a
    // burst of clients overflows it and each extra one waits a second for
    // its SYN to be sent again. Calling listen() again raises it.
    void raise_backlog() { ::listen(svr_sock_, MAX_CONNECTIONS); }

private:
    bool process_and_close_socket(socket_t sock) override {
        Connection c;
        c.sock = sock;
        t_conn = &c;
        if (t_refuse) {
            std::string body = "{\"error\": {\"message\": \"too many open connections; try again later\", \"type\": "
                               "\"server_error\", \"param\": null, \"code\": \"too_many_connections\"}}";
            std::string busy = strprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                         "Connection: close\r\nContent-Length: %zu\r\n\r\n", body.size()) + body;
            (void)!send(sock, busy.data(), busy.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        } else {
            DeadlineStream strm(c);
            for (int n = 0; n < KEEP_ALIVE_MAX && is_running(); n++) {
                // Between requests: wait for the next one's first byte.
                bool next = strm.buffered();
                auto idle_until = std::chrono::steady_clock::now() + std::chrono::seconds(KEEP_ALIVE_S);
                while (!next && is_running() && std::chrono::steady_clock::now() < idle_until)
                    next = wait_socket(sock, POLLIN, std::min(idle_until, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
                if (!next || !is_running()) break;
                c.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(HEAD_DEADLINE_S);
                c.in_head = true;
                c.head_bytes = 0;
                c.refused = 0;
                bool closed = false;
                bool ok = process_request(strm, n + 1 == KEEP_ALIVE_MAX, closed, nullptr);
                if (!ok || closed || c.close || c.refused) break;
            }
        }
        t_conn = nullptr;
        // A request refused before its body was read may still be sending
        // it; closing now would reset the connection and lose the answer.
        // So stop writing, and read (and drop) what comes for a moment.
        shutdown(sock, SHUT_WR);
        if (c.close) {
            char drop[4096];
            auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
            size_t dropped = 0;
            while (dropped < (4u << 20) && wait_socket(sock, POLLIN, until)) {
                ssize_t n = recv(sock, drop, sizeof drop, 0);
                if (n <= 0) break;
                dropped += (size_t)n;
            }
        }
        close(sock);
        return true;
    }
};

// The head is in: the body gets its own deadline, and what is wrong with
// the head itself is answered now, before the body is read.
static httplib::Server::HandlerResponse check_head(const httplib::Request& req, httplib::Response& res) {
    if (!t_conn) return httplib::Server::HandlerResponse::Unhandled;
    t_conn->in_head = false;
    t_conn->deadline = std::chrono::steady_clock::now() + std::chrono::seconds(BODY_DEADLINE_S);
    ApiError err{0, "", "", ""};
    size_t lengths = req.get_header_value_count("Content-Length");
    std::string length = req.get_header_value("Content-Length");
    if (req.headers.size() > MAX_HEADERS)
        err = {431, strprintf("the request has %zu headers; at most %zu are allowed", req.headers.size(), MAX_HEADERS), "", "headers_too_large"};
    else if (lengths > 1)
        err = {400, "the request has more than one Content-Length header", "", "bad_request"};
    else if (lengths == 1 && (length.empty() || length.size() > 18 || length.find_first_not_of("0123456789") != std::string::npos))
        err = {400, "Content-Length \"" + length.substr(0, 30) + "\" is not a number of bytes", "", "bad_request"};
    else if (lengths == 1 && std::stoull(length) > MAX_BODY_BYTES)
        err = {413, strprintf("the request body is over %zu bytes", MAX_BODY_BYTES), "", "request_too_large"};
    if (!err.status) return httplib::Server::HandlerResponse::Unhandled;
    send_error(res, err);
    res.set_header("Connection", "close");
    t_conn->close = true;
    return httplib::Server::HandlerResponse::Handled;
}

// ---------------------------------------------------------------------------
// Answers. generate() says why it stopped; OpenAI knows two reasons.
static const char* finish_reason(Finish f) {
    return f == Finish::Length || f == Finish::Context ? "length" : "stop";
}

static json usage_json(const Job& job) {
    int p = (int)job.prompt.size(), c = (int)job.result.ids.size();
    return {{"prompt_tokens", p}, {"completion_tokens", c}, {"total_tokens", p + c}};
}

// The fields every answer and every stream chunk carry.
static json envelope(const Server& e, const Job& job, const char* object) {
    return {{"id", strprintf("%s-%d", job.chat ? "chatcmpl" : "cmpl", job.id)},
            {"object", object}, {"created", job.created}, {"model", e.model_id}};
}

// OpenAI's logprobs object for the tokens [from, to) of a job (the chat
// form, for both endpoints): each token's text, log-probability and bytes,
// and its top alternatives.
static json logprobs_json(const Server& e, const Job& job, size_t from, size_t to) {
    auto entry = [&](int id, float prob) {
        std::string b = token_bytes(e.tok, id);
        return json{{"token", utf8_sanitize(b)}, {"logprob", std::log(std::max(prob, 1e-30f))},
                    {"bytes", std::vector<unsigned char>(b.begin(), b.end())}};
    };
    json content = json::array();
    for (size_t i = from; i < to && i < job.tokens.size(); i++) {
        const SampleInfo& info = job.tokens[i];
        json t = entry(info.token, info.prob), top = json::array();
        for (int k = 0; k < std::min(job.top_logprobs, info.n_top); k++) top.push_back(entry(info.top[k].id, info.top[k].prob));
        t["top_logprobs"] = top;
        content.push_back(t);
    }
    return {{"content", content}};
}

static json answer_json(const Server& e, const Job& job) {
    json a = envelope(e, job, job.chat ? "chat.completion" : "text_completion");
    json choice = {{"index", 0}};
    if (job.chat) choice["message"] = {{"role", "assistant"}, {"content", job.result.text}};
    else choice["text"] = job.result.text;
    choice["logprobs"] = job.top_logprobs < 0 ? json(nullptr) : logprobs_json(e, job, 0, job.result.ids.size());
    choice["finish_reason"] = finish_reason(job.result.finish);
    a["choices"] = json::array({choice});
    a["usage"] = usage_json(job);
    return a;
}

// One stream chunk: a piece of text (chat: in "delta"), or the finish
// reason with no text.
static json chunk_json(const Server& e, const Job& job, const json& delta, const char* finish, json logprobs = nullptr) {
    json c = envelope(e, job, job.chat ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", 0}};
    if (job.chat) choice["delta"] = delta;
    else choice["text"] = delta.value("content", "");
    choice["logprobs"] = logprobs;
    choice["finish_reason"] = finish ? json(finish) : json(nullptr);
    c["choices"] = json::array({choice});
    return c;
}

// What the request log line says about a generation: handler and logger
// run on the same pool thread, one request after another.
struct RequestNote {
    std::chrono::steady_clock::time_point t0{};  // unset when httplib answered before routing
    std::string tokens;  // " | 30 prompt + 20 completion tokens (length)"
};
static thread_local RequestNote t_note;

static void note_tokens(const Job& job, const char* how) {
    t_note.tokens = strprintf(" | %zu prompt + %zu completion tokens (%s)", job.prompt.size(), job.result.ids.size(), how);
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
        bool ok = !job->chat || send(dump(chunk_json(e, *job, {{"role", "assistant"}, {"content", ""}}, nullptr)));
        for (bool done = false; ok && !done;) {
            std::string piece;
            json logprobs;  // the tokens sampled since the last piece
            {
                std::unique_lock<std::mutex> lk(job->mu);
                while (!job->cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return !job->unsent.empty() || job->done; }))
                    if (t_conn && client_gone(t_conn->sock)) break;  // gone while waiting in the queue
                if (job->unsent.empty() && !job->done) {
                    ok = false;
                    break;
                }
                piece.swap(job->unsent);
                done = job->done;
                if (job->top_logprobs >= 0 && !piece.empty()) {
                    logprobs = logprobs_json(e, *job, job->tokens_sent, job->tokens.size());
                    job->tokens_sent = job->tokens.size();
                }
            }
            if (!piece.empty()) ok = send(dump(chunk_json(e, *job, {{"content", piece}}, nullptr, logprobs)));
        }
        if (!ok) {
            job->cancelled = true;
            t_note.tokens = " | the client went away";
            return false;
        }
        if (!job->error.empty()) {
            send(dump(json{{"error", {{"message", job->error}, {"type", "server_error"}, {"param", nullptr}, {"code", nullptr}}}}));
        } else {
            send(dump(chunk_json(e, *job, json::object(), finish_reason(job->result.finish))));
            if (job->include_usage) {
                json u = envelope(e, *job, job->chat ? "chat.completion.chunk" : "text_completion");
                u["choices"] = json::array();
                u["usage"] = usage_json(*job);
                send(dump(u));
            }
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
                                               job->prompt.size(), job->gen.n_predict, e.sched.pages.n_blocks * e.sched.pages.block),
                                "max_tokens", "kv_cache_too_small"});
    if (refused == "stopping") return send_error(res, {503, "the server is shutting down", "", "shutting_down"});
    if (!refused.empty())
        return send_error(res, {503, strprintf("the server is busy: %d requests are already waiting; try again later",
                                            e.opt.queue_limit), "", "queue_full"});
    if (job->stream) return stream_answer(e, job, res);
    // While the job waits and runs, look every 100 ms whether the client is
    // still there: one that has gone gets no answer, so its job is cancelled
    // (the model thread stops at the next piece of text, or skips it).
    std::unique_lock<std::mutex> lk(job->mu);
    while (!job->cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return job->done; })) {
        if (t_conn && client_gone(t_conn->sock)) {
            job->cancelled = true;
            t_conn->close = true;
            t_note.tokens = " | the client went away";
            return;
        }
    }
    if (!job->error.empty()) return send_error(res, {job->error_status, job->error, "", ""});
    res.set_content(dump(answer_json(e, *job)), "application/json");
    note_tokens(*job, finish_name(job->result.finish));
}

// Errors httplib finds itself (no such path, body too large) get the same
// JSON shape as ours; answers that already have a body keep it.
static httplib::Server::HandlerResponse error_page(const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    if (t_conn && t_conn->refused) {  // DeadlineStream stopped reading the request
        res.status = t_conn->refused;
        t_conn->close = true;
    }
    // httplib refuses a head line over CPPHTTPLIB_HEADER_MAX_LENGTH (8 KB) as
    // malformed (400); it is a head too large, 431.
    if (t_conn && t_conn->in_head && res.status == 400 && t_conn->head_bytes > CPPHTTPLIB_HEADER_MAX_LENGTH) {
        res.status = 431;
        t_conn->close = true;
    }
    if (res.status == 404) send_error(res, {404, "no such endpoint: " + req.method + " " + req.path, "", "not_found"});
    else if (res.status == 413)
        send_error(res, {413, strprintf("the request body is over %zu bytes", MAX_BODY_BYTES), "", "request_too_large"});
    else if (res.status == 431)
        send_error(res, {431, strprintf("the request line and headers are over %zu bytes", MAX_HEAD_BYTES), "", "headers_too_large"});
    else if (res.status == 408)
        send_error(res, {408, strprintf("the request did not arrive in time (head: %d s, body: %d s)", HEAD_DEADLINE_S, BODY_DEADLINE_S), "", "request_timeout"});
    else send_error(res, {res.status, strprintf("HTTP %d", res.status), "", ""});
    return httplib::Server::HandlerResponse::Handled;
}

// One INFO line per request: method, path, status, tokens, time.
static void log_request(const httplib::Request& req, const httplib::Response& res) {
    bool timed = t_note.t0.time_since_epoch().count() != 0;
    double ms = timed ? std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_note.t0).count() : 0;
    std::string path = req.path.substr(0, 200);
    for (char& c : path)
        if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';  // a log line stays one line
    LOGI(CAT_SERVER, "%s %s %d%s | %.1f ms", req.method.c_str(), path.c_str(), res.status, t_note.tokens.c_str(), ms);
    t_note = RequestNote();
}

static void route(httplib::Server& svr, Server& e) {
    using httplib::Request;
    using httplib::Response;
    svr.set_pre_routing_handler([](const Request& req, Response& res) {
        t_note = RequestNote();
        t_note.t0 = std::chrono::steady_clock::now();
        return check_head(req, res);
    });
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
            if (!whole) {  // past MAX_BODY_BYTES (httplib set 413), or the client left
                if (res.status < 400) res.status = 400;
                return;  // error_page writes the JSON
            }
            handle_generate(e, body, res, chat);
        };
    };
    svr.Post("/v1/chat/completions", generate_route(true));
    svr.Post("/v1/completions", generate_route(false));
    svr.Get("/v1/models", [&e](const Request&, Response& res) {
        json m = {{"id", e.model_id}, {"object", "model"}, {"created", e.started}, {"owned_by", "lantern"}};
        res.set_content(dump(json{{"object", "list"}, {"data", json::array({m})}}), "application/json");
    });
    // The page to watch it: a chat with each token shaded by its
    // probability, and the scheduler live (serve_page.html, built in).
    static const char page[] =
#include "serve_page.inc"
        ;
    svr.Get("/", [](const Request&, Response& res) { res.set_content(page, "text/html; charset=utf-8"); });
    svr.Get("/health", [&e](const Request&, Response& res) {
        SchedStats st = scheduler_stats(e.sched);
        res.set_content(dump(json{{"status", "ok"}, {"model", e.model_id}, {"waiting", st.waiting},
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
    svr.set_error_handler(httplib::Server::HandlerWithResponse(error_page));
    svr.set_exception_handler([](const Request&, Response& res, std::exception_ptr) {
        send_error(res, {500, "internal error", "", ""});
    });
    svr.set_logger(log_request);
    svr.set_payload_max_length(MAX_BODY_BYTES);
    // httplib's default also sets SO_REUSEPORT, with which a second server
    // on the same port starts without complaint and the kernel splits the
    // connections between the two. SO_REUSEADDR alone still allows a quick
    // restart, and a port in use is an error.
    svr.set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    svr.new_task_queue = [] { return new ConnectionThreads(); };
}

// ---------------------------------------------------------------------------
// ./run serve [MODEL] [flags]
int cmd_serve(int argc, char** argv) {
    Server e;
    e.opt = parse_command("serve", argc, argv);
    const Options& o = e.opt;
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

    if (o.engine.device == Device::CUDA) {
        device_use(Device::CUDA);  // a build or machine without CUDA says so first
        fail("serve: --device cuda runs one sequence at a time; the batching server runs on the CPU");
    }
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
