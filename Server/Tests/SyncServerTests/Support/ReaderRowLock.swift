import Foundation

/// A psql session that holds a reader's row lock (`SELECT ... FOR UPDATE`, then `pg_sleep(600)`)
/// until ``release()``, so that the server's pushes for that reader wait on it, each holding a
/// pooled connection. Released, the session is terminated and its transaction rolls back.
///
/// Not `Sendable`: one test's lock.
final class ReaderRowLock {
    private let cluster: PostgresCluster
    private let ended = DispatchSemaphore(value: 0)
    private var released = false

    /// Takes the lock of `reader` in `database` and returns once the session sleeps holding it.
    init(cluster: PostgresCluster, database: String, reader: UUID) async throws {
        self.cluster = cluster
        let sql = "BEGIN; SELECT 1 FROM readers WHERE reader_id = '\(reader.uuidString.lowercased())' FOR UPDATE; SELECT pg_sleep(600); COMMIT;"
        let ended = ended
        Thread.detachNewThread {
            _ = try? cluster.psql(sql, database: database)
            ended.signal()
        }
        try await waitUntil("the lock holder to sleep", interval: .milliseconds(50)) {
            try cluster.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND state = 'active' AND pid <> pg_backend_pid()",
                             database: database) == "1"
        }
    }

    /// Ends the session (once; later calls do nothing) and waits for it to be gone.
    func release() throws {
        guard !released else { return }
        released = true
        try cluster.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(600)%' AND pid <> pg_backend_pid()")
        _ = ended.wait(timeout: .now() + 60)
    }

    deinit { try? release() }
}
