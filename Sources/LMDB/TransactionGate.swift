#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The in-process reader/writer gate around LMDB transactions.
///
/// `mdb_env_set_mapsize` may only be called when this process has no active transaction, so every
/// transaction holds the gate shared and a map resize holds it exclusive.
///
/// `@unchecked Sendable` is safe because the only state is a heap-allocated `pthread_rwlock_t`,
/// which is designed to be used from many threads; it is never moved after `init`.
final class TransactionGate: @unchecked Sendable {
    private let rwlock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        rwlock = .allocate(capacity: 1)
        rwlock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(rwlock, nil)
    }

    deinit {
        pthread_rwlock_destroy(rwlock)
        rwlock.deallocate()
    }

    /// Runs `body` while holding the gate shared (any number of transactions at once).
    func shared<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_rdlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }

    /// Runs `body` while holding the gate exclusive (no transaction of this process is active).
    func exclusive<R>(_ body: () throws -> R) rethrows -> R {
        pthread_rwlock_wrlock(rwlock)
        defer { pthread_rwlock_unlock(rwlock) }
        return try body()
    }
}
