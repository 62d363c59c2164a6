// chapters/attention-hard/checker.cpp — the attention checker, under this exercise's name: the
// variant changes what the stub tells, not what is checked.
#include "../attention/checker.cpp"
