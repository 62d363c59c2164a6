// A slip in plan_step (chapters/scheduler): the prompts are read in slot
// order, not oldest request first, so a request that arrived later but took
// a lower slot gets ahead. tests/check_exercises.sh checks that the
// scheduler checker fails this and names the order.
#include <algorithm>
#include "chapters/scheduler/plan.h"

std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens) {
    std::vector<StepRows> rows;
    int budget = batch_tokens;
    for (int i = 0; i < (int)slots.size(); i++)
        if (slots[i].busy && slots[i].decoding) {
            rows.push_back({i, 1, true});
            budget--;
        }
    std::vector<int> prefilling;
    for (int i = 0; i < (int)slots.size(); i++)
        if (slots[i].busy && !slots[i].decoding) prefilling.push_back(i);
    for (int i : prefilling) {
        int left = slots[i].prompt_len - slots[i].prefilled, n = std::min(left, budget);
        if (n <= 0) break;
        rows.push_back({i, n, n == left});
        budget -= n;
    }
    return rows;
}
