// The event store is built on the LMDB wrapper and its public API speaks the wrapper's types
// (LMDBEnvironment, LMDBEnvironmentOptions, LMDBError, typed databases and codecs). `LMDB` is a
// target of this package, not a product, so it is re-exported: `import EventStoreLMDB` is all a
// host app writes, as before the split.
@_exported import LMDB
