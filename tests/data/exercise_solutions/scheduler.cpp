// The solution of chapters/scheduler: scheduler.cpp:scheduler_step's step 3
// (the batch) as a function of the slots' state. tests/check_exercises.sh
// checks that the scheduler checker passes it (make exercise EX=scheduler
// SOLUTION=1).
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
    std::sort(prefilling.begin(), prefilling.end(), [&](int a, int b) { return slots[a].id < slots[b].id; });
    for (int i : prefilling) {
        int left = slots[i].prompt_len - slots[i].prefilled, n = std::min(left, budget);
        if (n <= 0) break;
        rows.push_back({i, n, n == left});
        budget -= n;
    }
    return rows;
}
