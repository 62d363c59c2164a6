// chapters/scheduler/plan.h — what plan_step works with: SlotView and
// StepRows, the engine's own structs (scheduler.h), which the stub, the
// checker and scheduler.cpp:plan_step share.
#pragma once
#include <vector>
#include "serve/scheduler.h"
