// server_http.cpp — the HTTP transport of ./run serve: cpp-httplib's
// request parsing and routing (Debian's libcpp-httplib-dev) under limits
// and deadlines, each connection on a thread of its own, what is refused
// answered in the API's error shape, and one log line per request.
//
// Why not httplib's own loop: it times each read (5 s), not the request. A
// client that sends one header line every 2 s holds its thread for ever,
// nobody counts headers, and with a fixed pool of threads twenty such
// clients keep /health from ever being read. So each connection runs
// through HardenedServer's loop below instead of httplib's: the same
// request parsing and routing (httplib's process_request), over a Stream
// that enforces
//   - a deadline for the whole request head, and another for the body
//     (408 when missed), whatever the pace of the single reads;
//   - at most MAX_HEAD_BYTES of request line and headers (431 past them);
// and every connection gets its own thread, up to MAX_CONNECTIONS open at
// once (past that: 503 and close), separate from the generation queue.
// The limit that remains: a client holding MAX_CONNECTIONS connections
// makes /health wait, for at most HEAD_DEADLINE_S per connection it holds
// without sending a request (tests/check_hostile_server.sh shows both).
// See book/13-serving.md and book/B-untrusted-input.md.
#include "serve/server_http.h"
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <unistd.h>
#include <arpa/inet.h>
#include <poll.h>
#include "logging.h"

const size_t MAX_BODY_BYTES = 1 << 20;  // a request body past this gets 413
const int MAX_CONNECTIONS = 128;
const int HEAD_DEADLINE_S = 10;        // request line + headers
const int BODY_DEADLINE_S = 60;        // the body, after the head
const int WRITE_TIMEOUT_S = 10;        // one write to a client that does not read
const int KEEP_ALIVE_S = 5, KEEP_ALIVE_MAX = 100;
const size_t MAX_HEAD_BYTES = 32 << 10;
const size_t MAX_HEADERS = 100;

void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.status;
    res.set_content(api_dump(error_json(e)), "application/json");
}

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
static bool socket_peer_gone(int sock) {
    pollfd p{sock, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return false;
    char c;
    ssize_t n = recv(sock, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

bool client_gone() { return t_conn && socket_peer_gone(t_conn->sock); }

void close_connection() {
    if (t_conn) t_conn->close = true;
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
               !socket_peer_gone(c_.sock);
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

// What a handler adds to its request's log line (note_request): handler
// and logger run on the connection's thread, one request after another.
struct RequestNote {
    std::chrono::steady_clock::time_point t0{};  // unset when httplib answered before routing
    std::string tokens;  // " | 30 prompt + 20 completion tokens (length)"
};
static thread_local RequestNote t_note;

void note_request(const std::string& text) { t_note.tokens = text; }

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

HardenedServer::HardenedServer() {
    set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
        t_note = RequestNote();
        t_note.t0 = std::chrono::steady_clock::now();
        return check_head(req, res);
    });
    set_error_handler(httplib::Server::HandlerWithResponse(error_page));
    set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
        send_error(res, {500, "internal error", "", ""});
    });
    set_logger(log_request);
    set_payload_max_length(MAX_BODY_BYTES);
    // httplib's default also sets SO_REUSEPORT, with which a second server
    // on the same port starts without complaint and the kernel splits the
    // connections between the two. SO_REUSEADDR alone still allows a quick
    // restart, and a port in use is an error.
    set_socket_options([](socket_t sock) {
        int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    new_task_queue = [] { return new ConnectionThreads(); };
}

void HardenedServer::raise_backlog() { ::listen(svr_sock_, MAX_CONNECTIONS); }

bool HardenedServer::process_and_close_socket(socket_t sock) {
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
