import Foundation
import LMDB

/// Group commit: concurrent writers of one process share write transactions.
///
/// Each writer submits its work and waits. Whoever finds no commit in progress becomes the
/// leader: it takes every pending request (its own included), runs them one after another in ONE
/// LMDB write transaction, commits once (one fsync), and hands each writer its own result. While
/// it commits, new requests queue up for the next leader. Without contention a request is
/// committed alone, at once; with 16 writers, one fsync acknowledges many of them.
///
/// A request that fails with a rule violation (``ReadingEvents/ValidationError`` or a version
/// conflict), which is thrown before it writes anything, fails alone; any other error aborts the
/// shared transaction and is handed to every request of the group (each may retry: commands are
/// idempotent by their command ID).
///
/// `@unchecked Sendable`: `queue` and `leaderActive` are only touched while holding `condition`;
/// a request's `outcome` is written by the leader before it broadcasts and read by its owner after
/// waking under the same lock.
final class GroupCommit: @unchecked Sendable {
    typealias Work = (WriteTransaction) throws -> Any

    final class Request {
        let work: Work
        var outcome: Result<Any, Error>?
        init(work: @escaping Work) { self.work = work }
    }

    private let condition = NSCondition()
    private var queue: [Request] = []
    private var leaderActive = false
    private let environment: LMDBEnvironment
    private let isSoloFailure: (Error) -> Bool

    /// Requests committed so far and transactions used (read through ``counts``).
    private var requestsCommitted = 0
    private var transactionsCommitted = 0

    init(environment: LMDBEnvironment, isSoloFailure: @escaping (Error) -> Bool) {
        self.environment = environment
        self.isSoloFailure = isSoloFailure
    }

    /// Runs `work` inside a shared write transaction and returns its result once committed.
    func submit(_ work: @escaping Work) throws -> Any {
        let request = Request(work: work)
        condition.lock()
        queue.append(request)
        while true {
            if let outcome = request.outcome {
                condition.unlock()
                return try outcome.get()
            }
            if !leaderActive {
                leaderActive = true
                let batch = queue
                queue.removeAll()
                condition.unlock()
                run(batch)
                condition.lock()
                leaderActive = false
                condition.broadcast()
                continue
            }
            condition.wait()
        }
    }

    /// Commits one group; every request of it gets an outcome.
    private func run(_ batch: [Request]) {
        var results: [Result<Any, Error>] = []
        do {
            try environment.write { txn in
                results = []   // the closure re-runs after the map grows
                for request in batch {
                    do {
                        results.append(.success(try request.work(txn)))
                    } catch where isSoloFailure(error) {
                        results.append(.failure(error))
                    }
                }
            }
        } catch {
            results = batch.map { _ in .failure(error) }
        }
        condition.lock()
        for (request, result) in zip(batch, results) { request.outcome = result }
        requestsCommitted += batch.count
        transactionsCommitted += 1
        condition.unlock()
    }

    /// (requests, transactions) committed so far.
    var counts: (requests: Int, transactions: Int) {
        condition.lock(); defer { condition.unlock() }
        return (requestsCommitted, transactionsCommitted)
    }
}
