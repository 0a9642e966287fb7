#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// The prefix of LMDB's two POSIX semaphore names, `nil` for LMDB's own names: an App Group ID
    /// (for example `"group.com.example.books"`), so that an app and its widgets and extensions,
    /// each in its own sandbox, can open one store at once. The names become
    /// `"<prefix>/r<hash>"` and `"<prefix>/w<hash>"` (Apple platforms; `"<prefix>.r<hash>"` on
    /// Linux) from a patch of the vendored LMDB (`Scripts/lmdb-patches`).
    ///
    /// The rule: 1 ... ``maxSemaphorePrefixBytes`` UTF-8 bytes (the whole name must fit Darwin's
    /// 31 bytes), no `/` and no NUL; anything else is refused at open (``LMDBError/Kind/system``,
    /// `EINVAL`, naming `semaphorePrefix`). The process that creates `lock.mdb` chooses the names
    /// (they are stored in it), so give every process of the app the same prefix. Used where LMDB
    /// uses POSIX semaphores (``LMDBEnvironment/usesPOSIXSemaphores``: Apple platforms, and Linux
    /// with the `VendoredLMDB` trait); with Debian's LMDB the locks are mutexes inside `lock.mdb`,
    /// which need no name, and the prefix is only checked.
    public var semaphorePrefix: String?
    /// Checks the structure of every B-tree page of the data file at open
    /// (``LMDBEnvironment/checkPageStructure()``: reads every page in use once) and refuses a
    /// damaged file with one error instead of letting LMDB follow a damaged page; for a command
    /// that reads a whole store anyway (a sync with another store). Without it, a writable open
    /// checks the free-page list alone (every write transaction reads it).
    public var checkPages: Bool

    /// The longest ``semaphorePrefix``, in UTF-8 bytes (`MDB_SEMPREFIX_MAX` of the patch).
    public static let maxSemaphorePrefixBytes = 24

    /// Options with the given values; the defaults suit a personal reading log.
    public init(
        mapSize: Int = 16 << 20,
        maxReaders: UInt32 = 126,
        maxDatabases: UInt32 = 64,
        readOnly: Bool = false,
        semaphorePrefix: String? = nil,
        checkPages: Bool = false
    ) {
        self.mapSize = mapSize
        self.maxReaders = maxReaders
        self.maxDatabases = maxDatabases
        self.readOnly = readOnly
        self.semaphorePrefix = semaphorePrefix
        self.checkPages = checkPages
    }

    /// Checks ``semaphorePrefix`` against its rule.
    ///
    /// - Throws: ``LMDBError`` (``LMDBError/Kind/system``, `EINVAL`) whose message names
    ///   `semaphorePrefix` and the rule it breaks.
    func validateSemaphorePrefix() throws(LMDBError) {
        guard let prefix = semaphorePrefix else { return }
        let bytes = prefix.utf8.count
        let broken: String? =
            bytes == 0 ? "it is empty"
            : bytes > Self.maxSemaphorePrefixBytes ? "it is \(bytes) bytes, more than \(Self.maxSemaphorePrefixBytes)"
            : prefix.contains("/") ? "it contains '/'"
            : prefix.utf8.contains(0) ? "it contains a NUL byte"
            : nil
        guard let broken else { return }
        throw LMDBError(
            operation: "mdb_env_set_semprefix", code: EINVAL,
            message: "semaphorePrefix \"\(prefix)\" is invalid: \(broken) (the rule: 1 ... \(Self.maxSemaphorePrefixBytes) "
                + "UTF-8 bytes, no '/' and no NUL, for example an App Group ID)")
    }
}
