#include "cli/bwrap_parser.h"
