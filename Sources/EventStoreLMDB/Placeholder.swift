import CLMDB
/// Placeholder until the wrapper lands.
enum EventStoreLMDBPlaceholder {}
