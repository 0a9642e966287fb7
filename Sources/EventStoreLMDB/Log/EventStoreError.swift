/// The errors of the event log.
public enum EventStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The directory is not an event store (non-empty without `data.mdb`, a `data.mdb` that is not
    /// LMDB, or an LMDB environment without the log's format record). Nothing was modified.
    case notAStore(path: String, reason: String)
    /// The store was written by a newer format than this build reads. Nothing was modified.
    case unsupportedFormat(found: UInt32, supported: UInt32)
    /// The directory is already open in this process (LMDB forbids a second open).
    case alreadyOpen(path: String)
    /// The stream is not at the expected version; nothing was written. `actual` is nil when the
    /// stream has no events.
    case wrongExpectedVersion(stream: String, expected: ExpectedVersion, actual: UInt64?)
    /// A stored record is damaged (checksum, truncation, or a position field that does not match
    /// its key); it is never decoded into wrong data.
    case corruptRecord(position: UInt64, reason: String)
    /// The stream name is empty, too long, or contains a NUL byte.
    case invalidStreamName(String)
    /// The name is reserved for the log's own databases.
    case reservedDatabaseName(String)
    /// A stored record passed its checksum but its payload does not decode as an event
    /// (written by a broken build, or tampered with and re-checksummed).
    case undecodableEvent(position: UInt64, detail: String)
    /// A persisted view record does not decode; `replay rebuild` restores it from the log.
    case corruptView(detail: String)
    /// A view write was attempted through a read transaction (a programming error).
    case readOnlyViews
    /// An argument breaks a rule.
    case invalidArgument(field: String, detail: String)
    /// Another rebuild of the views is running (in this or another process); this one did not
    /// start, and nothing was written.
    case rebuildInProgress(path: String)
    /// The store was written in an older format that this build migrates when it opens the store
    /// writable (format 1 predates replicas, format 2 binary stream keys, format 3 the
    /// derived stream versions, head and clock of format 4); a read-only open
    /// cannot migrate it, nor can a raw ``EventLog/open(at:options:)``.
    case formatNeedsMigration(found: UInt32, current: UInt32)
    /// The store's views were written by an older build (views version `found`; this build reads
    /// `current`), or by a build with another set of view tables (`found == current`): opening
    /// the store writable rebuilds them once from the log; a read-only open cannot, and refuses
    /// the store rather than misread its records. Nothing was modified.
    case viewsNeedUpgrade(found: UInt8, current: UInt8)
    /// A backup's copy of the store at `source` did not verify or held fewer events than the
    /// store (a damaged store: a compacting copy skips what it cannot walk); nothing was left at
    /// the destination.
    case backupUnusable(source: String, reason: String)

    /// A sentence naming the failure.
    public var description: String {
        switch self {
        case .notAStore(let path, let reason): return "\(path) is not an event store: \(reason)"
        case .unsupportedFormat(let found, let supported):
            return "store format \(found) is newer than the supported format \(supported)"
        case .formatNeedsMigration(let found, let current):
            let predates = found <= 1 ? "replicas" : found == 2 ? "binary stream keys" : "derived stream versions, head and clock"
            return "store format \(found) predates \(predates) (this build writes format \(current)); open the store once writable (for example `replay rebuild --store DIR`) to migrate it, then read it"
        case .viewsNeedUpgrade(let found, let current):
            let made = found == current ? "were made with another set of view tables than this build's" : "are of version \(found) (this build reads version \(current))"
            return "the store's views \(made); open the store once writable (for example `replay rebuild --store DIR`) to rebuild them, then read it"
        case .alreadyOpen(let path): return "\(path) is already open in this process"
        case .wrongExpectedVersion(let stream, let expected, let actual):
            return "stream \(stream) expected version \(expected), actual \(actual.map(String.init) ?? "no stream")"
        case .corruptRecord(let position, let reason): return "corrupt record at position \(position): \(reason)"
        case .invalidStreamName(let name): return "invalid stream name \(name.debugDescription)"
        case .reservedDatabaseName(let name): return "database name \(name) is reserved by the event log"
        case .undecodableEvent(let position, let detail): return "event at position \(position) does not decode: \(detail)"
        case .corruptView(let detail): return "a stored view record is damaged (run `replay rebuild`): \(detail)"
        case .readOnlyViews: return "views were written through a read transaction"
        case .invalidArgument(let field, let detail): return "\(field): \(detail)"
        case .rebuildInProgress(let path):
            return "another rebuild of the views of \(path) is running; wait for it to finish (this one did not start)"
        case .backupUnusable(let source, let reason):
            return "the backup of \(source) is unusable, so none was written: \(reason); the store is damaged (run `replay verify --store \(source)`)"
        }
    }
}
