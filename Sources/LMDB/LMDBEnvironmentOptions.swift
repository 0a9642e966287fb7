/// How an ``LMDBEnvironment`` is opened.
public struct LMDBEnvironmentOptions: Sendable, Equatable {
    /// The initial size of the memory map in bytes. Writes grow it (doubling) when it is full, so
    /// this is a starting point, not a limit. LMDB rounds it to whole pages.
    public var mapSize: Int
    /// The number of reader slots in the lock file (LMDB's default is 126).
    public var maxReaders: UInt32
    /// The number of named databases the environment may open (a reading store opens about 40:
    /// the log's, the indexes, the sync tables and two generations of views).
    public var maxDatabases: UInt32
    /// Opens with `MDB_RDONLY`: every ``LMDBEnvironment/write(_:)`` fails with `EACCES`.
    public var readOnly: Bool

    /// Options with the given values; the defaults suit a personal reading log.
    public init(
        mapSize: Int = 16 << 20,
        maxReaders: UInt32 = 126,
        maxDatabases: UInt32 = 64,
        readOnly: Bool = false
    ) {
        self.mapSize = mapSize
        self.maxReaders = maxReaders
        self.maxDatabases = maxDatabases
        self.readOnly = readOnly
    }
}
