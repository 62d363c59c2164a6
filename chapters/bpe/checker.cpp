// chapters/bpe/checker.cpp — the student's bpe_word against the engine's.
//
// The checker does not call bpe_word itself: it encodes texts with
// tokenizer_encode, and on every pre-token the engine hands to bpe_word
// both versions run and the first disagreement is kept, with the bytes of
// the pre-token that caused it. So every case is a real call with real
// arguments.
//
// 1. a toy tokenizer with the book's five merges (and two more to test the
// order); 2. Qwen's tokenizer (models/tiny) on English, code, Chinese,
// emoji, repeated letters and random words; 3. generate() on models/tiny
// with a prompt encoded by the student's version.
#include <fstream>
#include "../checker_common.h"

struct BpeScratch;
void bpe_word_reference(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w);
void bpe_word_student(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w);

// What compare mode found: the first pre-token the two versions disagree on.
struct Mismatch {
    bool found = false;
    std::string bytes;
    std::vector<int> prefix, want, got;  // got is the student's whole out
};
static bool g_compare = false;
static Mismatch g_mismatch;

// The engine's calls land here.
void bpe_word(const Tokenizer& tok, const unsigned char* s, int n, std::vector<int>& out, BpeScratch& w) {
    if (!g_compare) {
        if (g_side == Side::Reference) bpe_word_reference(tok, s, n, out, w);
        else bpe_word_student(tok, s, n, out, w);
        return;
    }
    std::vector<int> prefix = out, mine = out;
    bpe_word_reference(tok, s, n, out, w);  // the engine goes on with the reference's ids
    bpe_word_student(tok, s, n, mine, w);
    if (mine != out && !g_mismatch.found) {
        g_mismatch.found = true;
        g_mismatch.bytes.assign((const char*)s, n);
        g_mismatch.prefix = prefix;
        g_mismatch.want.assign(out.begin() + prefix.size(), out.end());
        g_mismatch.got = mine;
    }
}

// Bytes as a C string literal: " lower" -> "\" lower\"", newline -> \n.
static std::string quoted(const std::string& b) {
    std::string s = "\"";
    for (unsigned char c : b) {
        if (c == '\n') s += "\\n";
        else if (c == '\t') s += "\\t";
        else if (c == '"' || c == '\\') s += std::string("\\") + (char)c;
        else if (c < 0x20 || c == 0x7f) s += fmt("\\x%02x", c);
        else s += (char)c;
    }
    return s + "\"";
}

// Ids with their pieces as the file writes them: [4722 "Ġlower"].
static std::string pieces(const Tokenizer& tok, const std::vector<int>& ids) {
    std::string s = "[";
    for (size_t i = 0; i < ids.size(); i++) {
        int id = ids[i];
        s += i ? ", " : "";
        s += id >= 0 && id < (int)tok.id_to_piece.size() ? fmt("%d %s", id, quoted(tok.id_to_piece[id]).c_str())
                                                         : fmt(tr("%d (not a token)", "%d（不是词元）"), id);
    }
    return s + "]";
}

static void run_text(Group& g, const Tokenizer& tok, const std::string& name, const std::string& text,
                     const std::string& hint = "") {
    g.start(name + tr(": ", "：") + quoted(text.size() > 60 ? text.substr(0, 57) + "..." : text));
    g_mismatch = Mismatch();
    g_compare = true;
    try {
        tokenizer_encode(tok, text);
    } catch (const LanternError& e) {
        g_compare = false;
        return g.fail(tr("encoding failed: ", "编码失败：") + std::string(e.what()), "");
    }
    g_compare = false;
    if (!g_mismatch.found) return;
    const Mismatch& m = g_mismatch;
    const std::vector<int>& got = m.got;
    if (got.size() < m.prefix.size() || !std::equal(m.prefix.begin(), m.prefix.end(), got.begin()))
        return g.fail(fmt(tr("on the pre-token %s, out already held %zu ids from the text before it, and your bpe_word "
                             "changed them",
                             "处理预分词片段 %s 时，out 里已经有前面文本的 %zu 个 id，而你的 bpe_word 改动了它们"),
                          quoted(m.bytes).c_str(), m.prefix.size()),
                      tr("append to out (out.push_back); do not clear it or overwrite what is there.",
                         "往 out 末尾追加（out.push_back）；不要清空它，也不要覆盖里面已有的内容。"));
    std::vector<int> tail(got.begin() + m.prefix.size(), got.end());
    std::string why = !hint.empty() ? hint
                    : tail.empty()  ? tr("you appended nothing: is it still the stub?", "你什么也没追加：是不是还是桩函数？")
                    : tail.size() == m.bytes.size() ? tr("you appended one id per byte: the merges never happened.",
                                                         "你给每个字节追加了一个 id：一次合并都没有发生。")
                                                    : tr("lowest rank first, leftmost on a tie, and look at all pairs "
                                                         "again after every merge.",
                                                         "先合并排名（rank）最低的一对，排名相同时取最左边的；"
                                                         "每次合并之后，重新查看所有相邻的对。");
    g.fail(fmt(tr("pre-token %s (%zu bytes)\n", "预分词片段 %s（%zu 个字节）\n"), quoted(m.bytes).c_str(), m.bytes.size()) +
               tr("expected ", "应为：") + pieces(tok, m.want) + tr("\ngot      ", "\n实际：") + pieces(tok, tail),
           why);
}

// ---------------------------------------------------------------------------
// The toy tokenizer: the 256 bytes, the book's five merges, then two more.

// A byte's printable stand-in (book/07-tokenizer.md, "Bytes, not characters").
static std::string stand_in(int b) {
    int cp = b, next = 256;
    for (int x = 0; x <= b; x++) {
        bool printable = (x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
        if (x == b) cp = printable ? b : next;
        if (!printable) next++;
    }
    if (cp < 0x80) return std::string(1, (char)cp);
    return std::string{(char)(0xC0 | (cp >> 6)), (char)(0x80 | (cp & 0x3F))};
}
static std::string json_string(const std::string& s) {
    std::string r = "\"";
    for (char c : s) r += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
    return r + "\"";
}

static std::string toy_tokenizer_json() {
    const std::vector<std::pair<std::string, std::string>> merges = {
        {"l", "o"}, {"lo", "w"}, {"e", "r"}, {"Ġ", "low"}, {"Ġlow", "er"},  // ranks 0-4: the book's
        {"a", "a"}, {"w", "e"}};                                              // 5: aa, 6: we
    std::string vocab, m;
    for (int b = 0; b < 256; b++) vocab += fmt("%s%s: %d", b ? ", " : "", json_string(stand_in(b)).c_str(), b);
    for (size_t i = 0; i < merges.size(); i++) {
        vocab += fmt(", %s: %zu", json_string(merges[i].first + merges[i].second).c_str(), 256 + i);
        m += fmt("%s[%s, %s]", i ? ", " : "", json_string(merges[i].first).c_str(), json_string(merges[i].second).c_str());
    }
    return "{\"version\": \"1.0\", \"added_tokens\": [], \"normalizer\": {\"type\": \"NFC\"},\n"
           " \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [\n"
           "   {\"type\": \"Split\", \"pattern\": {\"Regex\": \" ?\\\\p{L}+| ?\\\\p{N}|\\\\s+(?!\\\\S)|\\\\s+|[^\\\\s\\\\p{L}\\\\p{N}]+\"},"
           " \"behavior\": \"Isolated\", \"invert\": false},\n"
           "   {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]},\n"
           " \"decoder\": {\"type\": \"ByteLevel\"},\n"
           " \"model\": {\"type\": \"BPE\", \"vocab\": {" + vocab + "},\n \"merges\": [" + m + "]}}\n";
}

int main(int argc, char** argv) {
    checker_begin(argc, argv, "bpe",
                  "merge the lowest-rank adjacent pair until none is left",
                  "反复合并排名最低的相邻一对，直到无可合并");

    Group toy(tr("a toy tokenizer: the book's five merges, then (a,a) and (w,e)",
                 "一个玩具分词器：书中的五条合并规则，再加上 (a,a) 和 (w,e)"));
    {
        std::string path = "build/exercise/bpe/toy_tokenizer.json";
        std::ofstream(path) << toy_tokenizer_json();
        Tokenizer t;
        toy.start(tr("load the toy tokenizer", "加载玩具分词器"));
        try {
            tokenizer_load(t, path);
            run_text(toy, t, tr("the book's example, one token Ġlower", "书中的例子，得到一个词元 Ġlower"), " lower",
                     tr("follow the book's table: (l,o) rank 0, then (lo,w) rank 1, then (e,r) rank 2, (Ġ,low) 3, "
                        "(Ġlow,er) 4.",
                        "照书中的表来：(l,o) 排名 0，然后 (lo,w) 排名 1，再是 (e,r) 排名 2，(Ġ,low) 3，(Ġlow,er) 4。"));
            run_text(toy, t, tr("lowest rank first, not leftmost first", "先合并排名最低的，而不是最左边的"), "wer",
                     tr("in \"wer\" the pair (w,e) comes first but has rank 6; (e,r) has rank 2 and must merge first, "
                        "which leaves \"w\" \"er\" and nothing more to merge.",
                        "在 \"wer\" 里，(w,e) 排在前面，但排名是 6；(e,r) 排名 2，必须先合并，"
                        "之后剩下 \"w\" \"er\"，再没有可合并的了。"));
            run_text(toy, t, tr("a tie: the leftmost of equal ranks", "排名相同：取最左边的"), "aaa",
                     tr("(a,a) stands twice with the same rank: merge the leftmost, giving \"aa\" \"a\".",
                        "(a,a) 出现了两次，排名相同：合并最左边的那一对，得到 \"aa\" \"a\"。"));
            run_text(toy, t, tr("repeats", "重复"), "aaaaaaa lower lowerer wewer", "");
            run_text(toy, t, tr("bytes with no merge at all", "完全没有合并规则的字节"), "xyz! 123", "");
        } catch (const LanternError& e) {
            toy.fail(tr("the toy tokenizer did not load: ", "玩具分词器加载失败：") + std::string(e.what()), "");
        }
    }
    toy.end();

    Group qwen(tr("Qwen's tokenizer (151,387 merges)", "Qwen 的分词器（151,387 条合并规则）"));
    Tokenizer tok;
    qwen.start(tr("load models/tiny's tokenizer", "加载 models/tiny 的分词器"));
    bool have_qwen = true;
    try {
        tokenizer_load(tok, TINY);
    } catch (const LanternError& e) {
        qwen.fail(tr("loading failed: ", "加载失败：") + std::string(e.what()),
                  tr("models/tiny comes from `make models`.", "models/tiny 由 `make models` 生成。"));
        have_qwen = false;
    }
    if (have_qwen) {
        run_text(qwen, tok, tr("english", "英文"), "Hello world! The quick brown fox jumps over the lazy dog.");
        run_text(qwen, tok, tr("long words", "长单词"), " antidisestablishmentarianism supercalifragilisticexpialidocious");
        run_text(qwen, tok, tr("repeated letters", "重复的字母"), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa zzzzzzzzzzzzzzzz");
        run_text(qwen, tok, tr("code", "代码"), "for (int i = 0; i < n; i++) { sum += x[i] * w[i]; }\n    return sum;\n");
        run_text(qwen, tok, tr("chinese", "中文"), "自然语言处理很有趣，我们一起学习吧。");
        run_text(qwen, tok, tr("emoji and accents", "emoji 和带重音的字母"), "naïve café 👍🏽🎉 — “quotes” déjà vu");
        run_text(qwen, tok, tr("whitespace", "空白字符"), "a\n\n\tb    c\r\n  ");
        std::string words;
        for (int i = 0; i < 200; i++) {
            words += ' ';
            int len = rand_int(2, 14);
            for (int j = 0; j < len; j++) words += (char)('a' + rand_int(0, 25));
        }
        run_text(qwen, tok, tr("200 random lowercase words", "200 个随机的小写单词"), words);
        std::string mixed;
        for (int i = 0; i < 400; i++) {
            int r = rand_int(0, 9);
            mixed += r < 6 ? std::string(1, (char)('a' + rand_int(0, 25))) : r < 8 ? " " : r < 9 ? "é" : "ー";
        }
        run_text(qwen, tok, tr("random letters, spaces and a few multi-byte characters", "随机的字母、空格和几个多字节字符"), mixed);
    }
    qwen.end();

    Group e2e(tr("end to end: generate() on models/tiny from a prompt your version encodes",
                 "端到端：用你的版本编码提示词，在 models/tiny 上运行 generate()"), 2);
    if (have_qwen) {
        Model m;
        kernels_init(KernelSet::Fast, 1);
        e2e.start(tr("load models/tiny", "加载 models/tiny"));
        try {
            load_model(m, TINY);
            GenerateParams p;
            p.n_predict = 12;
            check_generate(e2e, m, tok, "Tokenizers turn text into numbers; lowering the rank lowers the cost.", p,
                           tr("greedy, 12 tokens", "贪心解码，12 个词元"),
                           tr("the prompt's ids must be the reference's exactly.", "提示词的 id 必须和参考实现完全一样。"));
        } catch (const LanternError& e) {
            e2e.fail(tr("loading failed: ", "加载失败：") + std::string(e.what()), "");
        }
    }
    e2e.end();
    return finish("bpe");
}
