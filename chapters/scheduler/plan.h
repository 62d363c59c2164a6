// chapters/scheduler/plan.h — what plan_step works with: the stub, the
// checker and the solution share these two structs.
#pragma once
#include <vector>

// One slot of the server as the scheduler sees it when it builds a step.
struct SlotView {
    bool busy = false;      // false: the slot is free (the other fields mean nothing)
    int id = 0;             // the request's number: a lower id arrived earlier
    int prompt_len = 0;     // tokens in its prompt (at least 1)
    int prefilled = 0;      // prompt tokens already in its KV cache
    bool decoding = false;  // the whole prompt is in: each step feeds back its last sampled token
};

// One sequence's rows in the step's batch.
struct StepRows {
    int slot = 0;           // which slot (index into the slots)
    int n = 0;              // how many of its tokens ride in this step
    bool logits = false;    // its last row's logits are sampled this step
};

std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens);
