// A C target needs a source file; this one declares nothing (see include/CLMDBVendoredOnLinux.h).
#include "CLMDBVendoredOnLinux.h"
