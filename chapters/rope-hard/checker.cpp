// chapters/rope-hard/checker.cpp — the rope checker, under this exercise's name: the
// variant changes what the stub tells, not what is checked.
#include "../rope/checker.cpp"
