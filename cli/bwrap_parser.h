// Placeholder: the bwrap argv parser.
#pragma once
