#include "trace/trace.hpp"
