/// The process-wide set of environment directories currently open.
///
/// LMDB forbids opening one environment twice in a process (its locks are per process: closing
/// the second handle would release the first one's locks), so ``LMDBEnvironment`` registers the
/// real path here and refuses a second open with ``LMDBError/Kind/alreadyOpen``.
enum OpenPathRegistry {
    private static let paths = Locked<Set<String>>([])

    /// Registers `path`; false when it is already registered.
    static func register(_ path: String) -> Bool {
        paths.withLock { $0.insert(path).inserted }
    }

    /// Forgets `path`.
    static func unregister(_ path: String) {
        _ = paths.withLock { $0.remove(path) }
    }
}
