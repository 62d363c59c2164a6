// chapters/bpe-hard/checker.cpp — the bpe checker, under this exercise's name: the
// variant changes what the stub tells, not what is checked.
#include "../bpe/checker.cpp"
