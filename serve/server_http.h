// server_http.h — HTTP for ./run serve, hardened: cpp-httplib's parsing
// and routing under deadlines and limits, one thread per connection up to
// a limit, OpenAI-shaped refusals, one log line per request.
// server_http.cpp says why each limit exists.
#pragma once
#include <httplib.h>
#include "serve/server_api.h"

// An httplib::Server whose connections run under the limits: register the
// endpoints on it (server.cpp:route), bind, listen. It answers what it
// refuses itself (a head or body too large or too slow, too many
// connections, no such endpoint) in the API's error shape, and logs every
// request.
class HardenedServer : public httplib::Server {
public:
    HardenedServer();
    // httplib listens with a backlog of 5 connections not yet accepted; a
    // burst of clients overflows it and each extra one waits a second for
    // its SYN to be sent again. Calling listen() again raises it.
    void raise_backlog();

private:
    bool process_and_close_socket(socket_t sock) override;
};

// Writes an ApiError as the response: its status and the error JSON.
void send_error(httplib::Response& res, const ApiError& e);

// For a handler, about the connection its request came on (false or
// nothing outside a HardenedServer's handler thread):
bool client_gone();                          // the client has closed its end
void close_connection();                     // no further request on it after this answer
void note_request(const std::string& text);  // what the request's log line adds after the status
