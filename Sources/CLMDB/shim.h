// The LMDB C API, imported as is. Nothing is added: every function the Swift wrapper needs is
// directly callable. `MDB_val` and the handles stay inside EventStoreLMDB.
#ifndef CLMDB_SHIM_H
#define CLMDB_SHIM_H
#include <lmdb.h>
#endif
