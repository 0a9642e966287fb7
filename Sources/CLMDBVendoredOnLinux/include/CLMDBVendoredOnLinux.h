// Nothing of its own: this target only carries the dependency on CLMDBVendored for Linux builds
// with the VendoredLMDB trait (see Package.swift; the LMDB module imports CLMDBVendored itself).
#ifndef CLMDB_VENDORED_ON_LINUX_H
#define CLMDB_VENDORED_ON_LINUX_H
#endif
