// json_read.cpp — depth-limited parsing and typed access (json_read.h says
// why). Every message starts with the file ("where") and quotes the key.
#include "json_read.h"
#include <algorithm>
#include <cmath>

using json = nlohmann::json;

// One pass over the text: brackets outside strings open and close levels.
// Invalid JSON is not this function's concern (the parser refuses it); it
// only has to count right for valid JSON and never read past the end.
int json_depth(const char* text, size_t n, int limit) {
    int depth = 0, deepest = 0;
    for (size_t i = 0; i < n; i++) {
        char c = text[i];
        if (c == '"') {
            for (i++; i < n && text[i] != '"'; i++)
                if (text[i] == '\\') i++;  // skip the escaped character (it may be a quote)
        } else if (c == '[' || c == '{') {
            if (++depth > deepest) deepest = depth;
            if (deepest > limit) return deepest;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return deepest;
}

json json_parse(const std::string& text, const std::string& where) {
    const char* sep = where.empty() ? "" : ": ";
    if (json_depth(text.data(), text.size(), JSON_MAX_DEPTH) > JSON_MAX_DEPTH)
        fail("%s%sJSON nested deeper than %d levels", where.c_str(), sep, JSON_MAX_DEPTH);
    try {
        return json::parse(text);
    } catch (const json::parse_error& e) {
        // The library's message is its own ("[json.exception.parse_error.101]
        // ... last read: ..."); ours is the place, counted from 0 as every
        // offset Lantern prints, what stood there, and what was expected.
        size_t at = std::min<size_t>(e.byte ? e.byte - 1 : 0, text.size());
        std::string found = at >= text.size() ? "the end of the text"
                            : (unsigned char)text[at] < 0x20 || (unsigned char)text[at] >= 0x7f
                                ? strprintf("byte 0x%02x", (unsigned char)text[at])
                                : strprintf("'%c'", text[at]);
        std::string w = e.what(), expected;
        size_t k = w.rfind("; expected ");
        if (k != std::string::npos) expected = w.substr(k + 11);
        if (expected == "string literal") expected = "a string in quotes";
        if (expected.find("or a literal") != std::string::npos) expected = "a value";
        fail("%s%sinvalid JSON at offset %zu: %s%s%s", where.c_str(), sep, at, found.c_str(), expected.empty() ? "" : ", expected ",
             expected.c_str());
    } catch (const json::exception&) {  // out_of_range: a number no double holds (1e400)
        fail("%s%sinvalid JSON: a number too large for a double", where.c_str(), sep);
    }
}

// "a string", "an array": for messages.
static std::string a_type(const json& v) {
    std::string t = v.type_name();
    return (t == "array" || t == "object" ? "an " : "a ") + t;
}

[[noreturn]] static void bad(const std::string& where, const std::string& key, const char* code, const std::string& what) {
    std::string msg = (where.empty() ? "" : where + ": ") + "\"" + key + "\" " + what;
    throw JsonError(msg, key, code);
}

long long json_as_int(const json& v, const std::string& key, long long lo, long long hi, const std::string& where) {
    std::string range = strprintf("an integer in [%lld, %lld]", lo, hi);
    if (!v.is_number_integer()) bad(where, key, "invalid_type", "must be " + range + ", not " + (v.is_number() ? v.dump() : a_type(v)));
    // Non-negative numbers come as unsigned: compare those as unsigned, so
    // that one past LLONG_MAX cannot wrap around to a small value.
    if (v.is_number_unsigned()) {
        unsigned long long u = v.get<unsigned long long>();
        if (hi < 0 || u > (unsigned long long)hi || (long long)u < lo) bad(where, key, "invalid_value", "must be " + range + ", not " + std::to_string(u));
        return (long long)u;
    }
    long long x = v.get<long long>();
    if (x < lo || x > hi) bad(where, key, "invalid_value", "must be " + range + ", not " + std::to_string(x));
    return x;
}

double json_as_number(const json& v, const std::string& key, double lo, double hi, const std::string& where) {
    std::string range = strprintf("a number in [%g, %g]", lo, hi);
    if (!v.is_number()) bad(where, key, "invalid_type", "must be " + range + ", not " + a_type(v));
    double x = v.get<double>();
    if (!(x >= lo && x <= hi)) bad(where, key, "invalid_value", "must be " + range + ", not " + strprintf("%g", x));
    return x;
}

bool json_as_bool(const json& v, const std::string& key, const std::string& where) {
    if (!v.is_boolean()) bad(where, key, "invalid_type", "must be true or false, not " + a_type(v));
    return v.get<bool>();
}

std::string json_as_string(const json& v, const std::string& key, const std::string& where) {
    if (!v.is_string()) bad(where, key, "invalid_type", "must be a string, not " + a_type(v));
    return v.get<std::string>();
}

bool json_has(const json& o, const char* key) {
    if (!o.is_object()) return false;
    auto it = o.find(key);
    return it != o.end() && !it->is_null();
}

long long json_int(const json& o, const char* key, long long def, long long lo, long long hi, const std::string& where) {
    return json_has(o, key) ? json_as_int(o[key], key, lo, hi, where) : def;
}

double json_number(const json& o, const char* key, double def, double lo, double hi, const std::string& where) {
    return json_has(o, key) ? json_as_number(o[key], key, lo, hi, where) : def;
}

bool json_bool(const json& o, const char* key, bool def, const std::string& where) {
    return json_has(o, key) ? json_as_bool(o[key], key, where) : def;
}

std::string json_str(const json& o, const char* key, const std::string& def, const std::string& where) {
    return json_has(o, key) ? json_as_string(o[key], key, where) : def;
}
