// The chat template on any messages: bytes split at '\0' into (role,
// content) pairs. Invariants: the prompt ends with the generation prompt
// and holds every message's content.
#include "fuzz.h"
#include "tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::vector<std::string> parts(1);
    for (size_t i = 0; i < size; i++) {
        if (data[i] == 0) parts.emplace_back();
        else parts.back() += (char)data[i];
    }
    static const char* roles[] = {"system", "user", "assistant"};
    std::vector<ChatMessage> msgs;
    for (size_t i = 0; i + 1 < parts.size(); i += 2)
        msgs.push_back({roles[(unsigned char)(parts[i].empty() ? 0 : parts[i][0]) % 3], parts[i + 1]});
    std::string prompt = apply_chat_template(msgs, true);
    const std::string tail = "<|im_start|>assistant\n";
    FUZZ_CHECK(prompt.size() >= tail.size() && prompt.compare(prompt.size() - tail.size(), tail.size(), tail) == 0);
    for (auto& m : msgs) FUZZ_CHECK(prompt.find(m.content) != std::string::npos);
    return 0;
}
