#include "advise/advise.hpp"  // analyze/ may not include advise/
