// chapters/scheduler/checker.cpp — the student's plan_step against the
// engine's, scheduler.cpp:plan_step.
//
// Three groups: cases worked by hand from the rule (the plan written out);
// random slot states, the student's plan against the engine's; and the real
// scheduler driven on models/tiny, step by step: before each step the
// checker reads the slots, after it what each slot consumed (prompt tokens
// read, or one token generated), and the student's plan for the same slots
// must give every slot the same count.
#include "../checker_common.h"
#include "serve/scheduler.h"
#include "plan.h"

std::vector<StepRows> plan_step_reference(const std::vector<SlotView>& slots, int batch_tokens);
std::vector<StepRows> plan_step_student(const std::vector<SlotView>& slots, int batch_tokens);

// The engine's calls land here.
std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens) {
    return g_side == Side::Reference ? plan_step_reference(slots, batch_tokens) : plan_step_student(slots, batch_tokens);
}

static bool same_plan(const std::vector<StepRows>& a, const std::vector<StepRows>& b) {
    bool same = a.size() == b.size();
    for (size_t i = 0; same && i < a.size(); i++) same = a[i].slot == b[i].slot && a[i].n == b[i].n && a[i].logits == b[i].logits;
    return same;
}

static std::string slots_text(const std::vector<SlotView>& s) {
    std::string t;
    for (size_t i = 0; i < s.size(); i++)
        t += !s[i].busy ? fmt(tr("  slot %zu: free\n", "  槽位 %zu：空闲\n"), i)
             : s[i].decoding ? fmt(tr("  slot %zu: request %d decoding\n", "  槽位 %zu：请求 %d 正在解码\n"), i, s[i].id)
                             : fmt(tr("  slot %zu: request %d prompt %d/%d read\n", "  槽位 %zu：请求 %d 的提示词已读 %d/%d\n"), i,
                                   s[i].id, s[i].prefilled, s[i].prompt_len);
    return t;
}
static std::string plan_text(const std::vector<StepRows>& p) {
    std::string t = "[";
    for (const StepRows& r : p) t += fmt(tr(" slot %d: %d%s", " 槽位 %d：%d%s"), r.slot, r.n, r.logits ? "+logits" : "");
    return t + " ]";
}

// What the usual slips look like, from the two plans.
static std::string diagnose(const std::vector<SlotView>& s, int budget, const std::vector<StepRows>& want,
                            const std::vector<StepRows>& got) {
    if (got.empty()) return tr("your plan is empty: is it still the stub?", "你的计划是空的：是不是还是桩函数？");
    int total = 0;
    for (const StepRows& r : got) total += r.n;
    if (total > budget) return fmt(tr("your plan has %d rows; the budget is %d.", "你的计划有 %d 行；预算是 %d。"), total, budget);
    for (const StepRows& w : want)
        if (s[w.slot].decoding) {
            bool there = false;
            for (const StepRows& g : got) there = there || (g.slot == w.slot && g.n == 1);
            if (!there)
                return fmt(tr("slot %d is decoding: it gets its one row every step, before any prompt.",
                              "槽位 %d 正在解码：每一步它都分到自己的一行，排在所有提示词之前。"), w.slot);
        }
    for (size_t i = 1; i < got.size(); i++)
        if (s[got[i].slot].decoding && !s[got[i - 1].slot].decoding)
            return tr("decode rows come first, then prompt chunks.", "解码的行排在前面，然后才是提示词的分段。");
    for (size_t i = 1; i < got.size(); i++)
        if (!s[got[i].slot].decoding && !s[got[i - 1].slot].decoding && s[got[i].slot].id < s[got[i - 1].slot].id)
            return tr("prompts go oldest first: by request id, not by slot index.",
                      "提示词按先来后到处理，最早的在前：按请求 id，而不是按槽位下标。");
    for (size_t i = 0; i < got.size() && i < want.size(); i++)
        if (got[i].slot == want[i].slot && got[i].n == want[i].n && got[i].logits != want[i].logits)
            return tr("logits: every decode row, and a prompt chunk only when it ends the prompt.",
                      "logit：每个解码行都要，提示词的分段只有在它是提示词的最后一段时才要。");
    if (total < budget && got.size() <= want.size())
        return tr("rows of the budget are left unused: a chunk is min(tokens left, rows left).",
                  "预算里还有行没用上：一段的长度是 min(剩下的词元数, 剩下的行数)。");
    return tr("decode rows first (one per decoding slot, slot order), then chunks of min(left, budget left), lowest id first.",
              "先排解码行（每个正在解码的槽位一行，按槽位顺序），再排长度为 min(剩下的, 剩下的预算) 的分段，id 最小的在前。");
}

struct Case { const char* name; int budget; std::vector<SlotView> slots; std::vector<StepRows> plan; };

int main(int argc, char** argv) {
    checker_begin(argc, argv, "scheduler",
                  "the rows of one continuous-batching step: decode first, then prompt chunks",
                  "连续批处理一步里的各行：先解码，再是提示词的分段");

    SlotView F;  // free
    auto pre = [](int id, int len, int done) { SlotView v; v.busy = true; v.id = id; v.prompt_len = len; v.prefilled = done; return v; };
    auto dec = [](int id) { SlotView v; v.busy = true; v.id = id; v.prompt_len = 5; v.prefilled = 5; v.decoding = true; return v; };
    Case cases[] = {
        {tr("nothing to do: every slot free", "无事可做：每个槽位都空闲"), 8, {F, F, F}, {}},
        {tr("one short prompt: all of it, and its logits", "一个短提示词：全部读完，并要它的 logit"), 8, {pre(1, 5, 0), F}, {{0, 5, true}}},
        {tr("a 20-token prompt, budget 8: the first chunk, no logits", "20 个词元的提示词，预算 8：第一段，不要 logit"), 8,
         {pre(1, 20, 0)}, {{0, 8, false}}},
        {tr("the stub's hint: 20 tokens beside two decoding slots, budget 8",
            "桩函数注释里的例子：20 个词元，旁边有两个正在解码的槽位，预算 8"), 8, {dec(1), pre(3, 20, 0), dec(2)},
         {{0, 1, true}, {2, 1, true}, {1, 6, false}}},
        {tr("... its last chunk: 2 tokens left", "……它的最后一段：还剩 2 个词元"), 8, {dec(1), pre(3, 20, 18), dec(2)},
         {{0, 1, true}, {2, 1, true}, {1, 2, true}}},
        {tr("decode rows first, even from a later slot", "解码行在前，即使它在后面的槽位"), 4, {pre(5, 9, 0), dec(4)},
         {{1, 1, true}, {0, 3, false}}},
        {tr("the oldest prompt first, whatever its slot", "最早的提示词在前，不管它在哪个槽位"), 10, {pre(9, 4, 0), pre(7, 4, 0), pre(8, 4, 0)},
         {{1, 4, true}, {2, 4, true}, {0, 2, false}}},
        {tr("the budget spent on decode: prompts wait", "预算都花在解码上：提示词等着"), 3, {dec(1), dec(2), pre(3, 6, 0), dec(4)},
         {{0, 1, true}, {1, 1, true}, {3, 1, true}}},
        {tr("a prompt half read goes on where it stopped", "读了一半的提示词从停下的地方接着读"), 16, {pre(2, 30, 20), F, pre(6, 3, 0)},
         {{0, 10, true}, {2, 3, true}}},
    };
    Group hand(tr("worked by hand from scheduler.cpp's rule", "按 scheduler.cpp 的规则手算的用例"));
    for (const Case& c : cases) {
        hand.start(fmt(tr("%s (budget %d)", "%s（预算 %d）"), c.name, c.budget));
        std::vector<StepRows> got = plan_step_student(c.slots, c.budget);
        if (!same_plan(got, c.plan))
            hand.fail(tr("the slots:\n", "各槽位：\n") + slots_text(c.slots) + tr("expected ", "应为：") + plan_text(c.plan) +
                          tr("\ngot      ", "\n实际：") + plan_text(got),
                      diagnose(c.slots, c.budget, c.plan, got));
    }
    hand.end();

    // Random states: free, reading and decoding slots, ids in any order,
    // budgets from one row to more than every slot needs.
    Group random(tr("random slots: your plan against scheduler.cpp:plan_step", "随机的槽位：你的计划与 scheduler.cpp:plan_step 对照"));
    for (int t = 0; t < 2000; t++) {
        int n = rand_int(1, 8), budget = rand_int(1, 40);
        std::vector<SlotView> slots(n);
        std::vector<int> ids;
        for (int i = 1; i <= n; i++) ids.push_back(i * 3 + rand_int(0, 2));
        for (int i = n - 1; i > 0; i--) std::swap(ids[i], ids[rand_int(0, i)]);
        for (int i = 0; i < n; i++) {
            int kind = rand_int(0, 2);  // free, reading its prompt, decoding
            if (kind == 0) continue;
            slots[i] = kind == 1 ? pre(ids[i], rand_int(1, 50), 0) : dec(ids[i]);
            if (kind == 1) slots[i].prefilled = rand_int(0, slots[i].prompt_len - 1);
        }
        std::vector<StepRows> want = plan_step_reference(slots, budget), got = plan_step_student(slots, budget);
        random.start(fmt(tr("random state %d: %d slots, budget %d", "随机状态 %d：%d 个槽位，预算 %d"), t + 1, n, budget));
        if (!same_plan(got, want)) {
            random.fail(tr("the slots:\n", "各槽位：\n") + slots_text(slots) + tr("expected ", "应为：") + plan_text(want) +
                            tr("\ngot      ", "\n实际：") + plan_text(got),
                        diagnose(slots, budget, want, got));
            break;
        }
    }
    random.end();

    // The scheduler runs the engine's plan here; the checker watches what
    // each step did and asks the student's plan for the same slots.
    Group real(tr("the real scheduler on models/tiny: your plan's rows per slot, step by step",
                  "models/tiny 上真正的调度器：逐步比较你的计划给每个槽位的行数"));
    g_side = Side::Reference;
    Model m;
    Tokenizer tok;
    if (load_tiny(real, m, tok)) {
        // slots, --batch-tokens, requests, a beginning all prompts share (its
        // whole 16-token blocks are reused from the cache: such a request
        // joins with part of its prompt already read)
        int runs[][4] = {{1, 3, 2, 0}, {2, 4, 4, 0}, {3, 8, 6, 0}, {4, 5, 7, 0}, {2, 6, 5, 33}};
        std::vector<int> common;
        for (int t = 0; t < 33; t++) common.push_back(rand_int(100, 5000));
        for (auto& run : runs) {
            Net net;
            net_init(net, m, 64);
            Scheduler s;
            scheduler_init(s, net, tok, run[0], run[1], 100, 64, 0, DType::F32);
            std::vector<std::pair<int, SlotView>> joined;  // this step's joins: slot, state
            for (int i = 1; i <= run[2]; i++) {
                auto r = std::make_shared<SchedRequest>();
                r->id = i;
                r->prompt.assign(common.begin(), common.begin() + run[3]);
                for (int t = rand_int(1, 20); t > 0; t--) r->prompt.push_back(rand_int(100, 5000));
                r->gen.n_predict = rand_int(1, 4);
                r->on_start = [&s, &joined, i] {
                    for (size_t k = 0; k < s.slots.size(); k++)
                        if (s.slots[k].req && s.slots[k].req->id == i)
                            joined.push_back({(int)k, {true, i, (int)s.slots[k].req->prompt.size(), s.slots[k].prefilled, false}});
                };
                scheduler_submit(s, r);
            }
            for (int step = 1; step <= 200; step++) {
                int n = (int)s.slots.size();
                std::vector<SlotView> view(n);
                std::vector<size_t> made(n, 0);
                for (int k = 0; k < n; k++)
                    if (s.slots[k].req) {
                        const Slot& sl = s.slots[k];
                        view[k] = {true, sl.req->id, (int)sl.req->prompt.size(), sl.prefilled, sl.next >= 0};
                        made[k] = sl.gen.res.ids.size();
                    }
                joined.clear();
                if (!scheduler_step(s)) break;
                real.start(fmt(tr("%d slots, --batch-tokens %d, %d requests%s: step %d", "%d 个槽位，--batch-tokens %d，%d 个请求%s：第 %d 步"),
                               run[0], run[1], run[2],
                               run[3] ? fmt(tr(" sharing their first %d tokens", "，共用开头的 %d 个词元"), run[3]).c_str() : "", step));
                for (auto& [k, v] : joined) view[k] = v;  // they joined at the start of the step, before its batch
                std::vector<int> did(n, 0), yours(n, 0);  // rows per slot: the scheduler's, the student's
                for (int k = 0; k < n; k++) {
                    if (!view[k].busy) continue;
                    const Slot& sl = s.slots[k];
                    bool gone = !sl.req || sl.req->id != view[k].id;  // finished in this step
                    if (view[k].decoding) did[k] = gone || sl.gen.res.ids.size() > made[k] ? 1 : 0;
                    else did[k] = gone ? view[k].prompt_len - view[k].prefilled : sl.prefilled - view[k].prefilled;
                }
                std::vector<StepRows> plan = plan_step_student(view, run[1]);
                for (const StepRows& r : plan)
                    if (r.slot >= 0 && r.slot < n) yours[r.slot] += r.n;
                if (did != yours) {
                    std::string a, b;
                    for (int k = 0; k < n; k++) a += fmt(" %d", did[k]), b += fmt(" %d", yours[k]);
                    real.fail(tr("the slots before the step:\n", "这一步之前的各槽位：\n") + slots_text(view) +
                                  tr("rows per slot, the scheduler's:", "每个槽位的行数，调度器的：") + a +
                                  tr("\nrows per slot, your plan's:     ", "\n每个槽位的行数，你的计划的：") + b +
                                  tr("\nyour plan: ", "\n你的计划：") + plan_text(plan),
                              g_groups_failed ? tr("fix the failures above first: they are smaller and say more.", "先修好上面的失败：它们规模更小，说明的问题也更多。")
                                              : tr("the cases above pass but this step does not: compare the rule with "
                                                   "scheduler.cpp:scheduler_step, step 3.",
                                                   "上面的用例都通过了，这一步却不行：把规则和 scheduler.cpp:scheduler_step "
                                                   "的第 3 步对照一下。"));
                    break;
                }
            }
        }
    }
    real.end();
    g_side = Side::Student;
    return finish("scheduler");
}
