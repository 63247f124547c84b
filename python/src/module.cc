// placeholder replaced below
#include <nanobind/nanobind.h>
NB_MODULE(_sdx, m) {}
