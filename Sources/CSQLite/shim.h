// The SQLite C API from the system library (Debian: libsqlite3-dev), imported as is for reading
// KOReader's statistics database. Nothing is added: the reader calls the API directly and only
// ReadingImport imports this module.
#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
