// chapters/scheduler/stub.cpp — the batch of one continuous-batching step
// (book/13-serving.md, "Many users at once: continuous batching").
//
// `./run serve --parallel N` runs up to N requests together: each step, one
// batched forward carries one row for every request that is generating and
// chunks of the prompts still being read, at most --batch-tokens rows in
// all. scheduler.cpp:plan_step is the engine's rule; yours takes its place.
// `make exercise EX=scheduler` checks it on cases worked by hand and on
// random slots against the engine's, then drives the real scheduler on
// models/tiny and compares your plan with what it did, step by step.
#include <algorithm>
#include "chapters/scheduler/plan.h"

// TODO(student): the rows of the next step, in batch order.
//
//   1. every busy slot that is decoding gets one row (n = 1, logits = true),
//      in slot order — always: a generating request never waits, and
//      batch_tokens is at least the number of slots;
//   2. then the slots still reading their prompt, the oldest request first
//      (lowest id, whatever its slot): a chunk of n = min(tokens of the
//      prompt left, rows left in the budget); logits only when the chunk
//      ends the prompt (its last token's logits give the first answer
//      token); stop when the budget is spent.
//
// Free slots get nothing; a slot appears at most once.
// Hint: with batch_tokens = 8 and two decoding slots, a 20-token prompt goes
// in as chunks of 6, 6, 6 and 2 over four steps.
std::vector<StepRows> plan_step(const std::vector<SlotView>& slots, int batch_tokens) {
    return {};  // the stub: an empty step
}
