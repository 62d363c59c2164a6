// json_read.h — the one way Lantern reads JSON that someone else wrote:
// config.json, generation_config.json, tokenizer.json, tokenizer_config.json
// and the bodies of HTTP requests. Every such text is untrusted input.
//
// Two rules, both enforced here so that no caller has to remember them:
//
//   1. Depth. Nesting deeper than JSON_MAX_DEPTH is refused before the text
//      is parsed. Copying, printing or walking a JSON value recurses once per
//      level, so 100,000 nested "[" (200 KB) would overflow the stack of
//      whoever touches the value later. No file or request Lantern reads
//      needs more than a handful of levels.
//   2. Types and ranges. A value is taken out only through the functions
//      below, which check its type and range first and throw a JsonError
//      naming the file and the key ("config.json: \"hidden_size\" must be an
//      integer in [1, 1048576], not 4294967304"). nlohmann's own get<int>()
//      would truncate 4294967304 to 8, turn 4e92 into undefined behaviour,
//      and throw its own exception types for "yes" where a bool belongs.
//
// A key that is absent or null takes the caller's default; a key that is
// present must have the right type and range. See book/B-untrusted-input.md,
// "Model files and requests are untrusted input".
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include "common.h"

const int JSON_MAX_DEPTH = 64;

// A value of the wrong type or out of range. `key` is what the message calls
// it ("eos_token_id[2]"); `code` is "invalid_type" or "invalid_value", which
// the server passes on to the client as OpenAI's error code.
struct JsonError : LanternError {
    std::string key, code;
    JsonError(const std::string& msg, const std::string& key, const std::string& code)
        : LanternError(msg), key(key), code(code) {}
};

// Parses `text`; `where` names it in errors ("models/tiny/config.json").
// Invalid JSON, a number too large for a double (1e400) and nesting past
// JSON_MAX_DEPTH throw LanternError.
nlohmann::json json_parse(const std::string& text, const std::string& where);
// The deepest nesting of arrays and objects in `text` (strings skipped),
// stopping early once past `limit`. Also used by tokenizer_load.cpp's scanner.
int json_depth(const char* text, size_t n, int limit);

// `v` itself, named `key` in messages.
long long json_as_int(const nlohmann::json& v, const std::string& key, long long lo, long long hi, const std::string& where);
double json_as_number(const nlohmann::json& v, const std::string& key, double lo, double hi, const std::string& where);
bool json_as_bool(const nlohmann::json& v, const std::string& key, const std::string& where);
std::string json_as_string(const nlohmann::json& v, const std::string& key, const std::string& where);

// o[key], or `def` when o has no such key or it is null.
bool json_has(const nlohmann::json& o, const char* key);
long long json_int(const nlohmann::json& o, const char* key, long long def, long long lo, long long hi, const std::string& where);
double json_number(const nlohmann::json& o, const char* key, double def, double lo, double hi, const std::string& where);
bool json_bool(const nlohmann::json& o, const char* key, bool def, const std::string& where);
std::string json_str(const nlohmann::json& o, const char* key, const std::string& def, const std::string& where);
