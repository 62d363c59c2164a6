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
        t += !s[i].busy ? fmt("  slot %zu: free\n", i)
             : s[i].decoding ? fmt("  slot %zu: request %d decoding\n", i, s[i].id)
                             : fmt("  slot %zu: request %d prompt %d/%d read\n", i, s[i].id, s[i].prefilled, s[i].prompt_len);
    return t;
}
static std::string plan_text(const std::vector<StepRows>& p) {
    std::string t = "[";
    for (const StepRows& r : p) t += fmt(" slot %d: %d%s", r.slot, r.n, r.logits ? "+logits" : "");
    return t + " ]";
}

// What the usual slips look like, from the two plans.
static std::string diagnose(const std::vector<SlotView>& s, int budget, const std::vector<StepRows>& want,
                            const std::vector<StepRows>& got) {
    if (got.empty()) return "your plan is empty: is it still the stub?";
    int total = 0;
    for (const StepRows& r : got) total += r.n;
    if (total > budget) return fmt("your plan has %d rows; the budget is %d.", total, budget);
    for (const StepRows& w : want)
        if (s[w.slot].decoding) {
            bool there = false;
            for (const StepRows& g : got) there = there || (g.slot == w.slot && g.n == 1);
            if (!there) return fmt("slot %d is decoding: it gets its one row every step, before any prompt.", w.slot);
        }
    for (size_t i = 1; i < got.size(); i++)
        if (s[got[i].slot].decoding && !s[got[i - 1].slot].decoding) return "decode rows come first, then prompt chunks.";
    for (size_t i = 1; i < got.size(); i++)
        if (!s[got[i].slot].decoding && !s[got[i - 1].slot].decoding && s[got[i].slot].id < s[got[i - 1].slot].id)
            return "prompts go oldest first: by request id, not by slot index.";
    for (size_t i = 0; i < got.size() && i < want.size(); i++)
        if (got[i].slot == want[i].slot && got[i].n == want[i].n && got[i].logits != want[i].logits)
            return "logits: every decode row, and a prompt chunk only when it ends the prompt.";
    if (total < budget && got.size() <= want.size()) return "rows of the budget are left unused: a chunk is min(tokens left, rows left).";
    return "decode rows first (one per decoding slot, slot order), then chunks of min(left, budget left), lowest id first.";
}

struct Case { const char* name; int budget; std::vector<SlotView> slots; std::vector<StepRows> plan; };

int main(int argc, char** argv) {
    checker_begin(argc, argv, "scheduler", "the rows of one continuous-batching step: decode first, then prompt chunks");

    SlotView F;  // free
    auto pre = [](int id, int len, int done) { SlotView v; v.busy = true; v.id = id; v.prompt_len = len; v.prefilled = done; return v; };
    auto dec = [](int id) { SlotView v; v.busy = true; v.id = id; v.prompt_len = 5; v.prefilled = 5; v.decoding = true; return v; };
    Case cases[] = {
        {"nothing to do: every slot free", 8, {F, F, F}, {}},
        {"one short prompt: all of it, and its logits", 8, {pre(1, 5, 0), F}, {{0, 5, true}}},
        {"a 20-token prompt, budget 8: the first chunk, no logits", 8, {pre(1, 20, 0)}, {{0, 8, false}}},
        {"the stub's hint: 20 tokens beside two decoding slots, budget 8", 8, {dec(1), pre(3, 20, 0), dec(2)},
         {{0, 1, true}, {2, 1, true}, {1, 6, false}}},
        {"... its last chunk: 2 tokens left", 8, {dec(1), pre(3, 20, 18), dec(2)}, {{0, 1, true}, {2, 1, true}, {1, 2, true}}},
        {"decode rows first, even from a later slot", 4, {pre(5, 9, 0), dec(4)}, {{1, 1, true}, {0, 3, false}}},
        {"the oldest prompt first, whatever its slot", 10, {pre(9, 4, 0), pre(7, 4, 0), pre(8, 4, 0)},
         {{1, 4, true}, {2, 4, true}, {0, 2, false}}},
        {"the budget spent on decode: prompts wait", 3, {dec(1), dec(2), pre(3, 6, 0), dec(4)}, {{0, 1, true}, {1, 1, true}, {3, 1, true}}},
        {"a prompt half read goes on where it stopped", 16, {pre(2, 30, 20), F, pre(6, 3, 0)}, {{0, 10, true}, {2, 3, true}}},
    };
    Group hand("worked by hand from scheduler.cpp's rule");
    for (const Case& c : cases) {
        hand.start(fmt("%s (budget %d)", c.name, c.budget));
        std::vector<StepRows> got = plan_step_student(c.slots, c.budget);
        if (!same_plan(got, c.plan))
            hand.fail("the slots:\n" + slots_text(c.slots) + "expected " + plan_text(c.plan) + "\ngot      " + plan_text(got),
                      diagnose(c.slots, c.budget, c.plan, got));
    }
    hand.end();

    // Random states: free, reading and decoding slots, ids in any order,
    // budgets from one row to more than every slot needs.
    Group random("random slots: your plan against scheduler.cpp:plan_step");
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
        random.start(fmt("random state %d: %d slots, budget %d", t + 1, n, budget));
        if (!same_plan(got, want)) {
            random.fail("the slots:\n" + slots_text(slots) + "expected " + plan_text(want) + "\ngot      " + plan_text(got),
                        diagnose(slots, budget, want, got));
            break;
        }
    }
    random.end();

    // The scheduler runs the engine's plan here; the checker watches what
    // each step did and asks the student's plan for the same slots.
    Group real("the real scheduler on models/tiny: your plan's rows per slot, step by step");
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
                real.start(fmt("%d slots, --batch-tokens %d, %d requests%s: step %d", run[0], run[1], run[2],
                               run[3] ? fmt(" sharing their first %d tokens", run[3]).c_str() : "", step));
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
                    real.fail("the slots before the step:\n" + slots_text(view) + "rows per slot, the scheduler's:" + a +
                                  "\nrows per slot, your plan's:     " + b + "\nyour plan: " + plan_text(plan),
                              g_groups_failed ? "fix the failures above first: they are smaller and say more."
                                              : "the cases above pass but this step does not: compare the rule with "
                                                "scheduler.cpp:scheduler_step, step 3.");
                    break;
                }
            }
        }
    }
    real.end();
    g_side = Side::Student;
    return finish("scheduler");
}
