import Foundation
import LMDB
import ReadingEvents

/// An error that fails only the command that threw it, not the group commit transaction it ran in.
///
/// Such errors are thrown by a command before it writes anything (a rule violation, a version
/// conflict), so the other commands of the same transaction may still commit. Any other error
/// aborts the shared transaction and fails every command of the group.
protocol FailsAlone: Error {
    /// Whether this error fails its own command alone (true unless the type says otherwise).
    var failsAlone: Bool { get }
}

extension FailsAlone {
    /// Whether this error fails its own command alone: true by default.
    var failsAlone: Bool { true }
}

/// A command that breaks a rule of the domain is rejected by `decide`, before any write.
extension ValidationError: FailsAlone {}

extension EventStoreError: FailsAlone {
    /// Only a version conflict is a rejection of one command (thrown by the append before it
    /// writes); every other store error is about the store itself and fails the whole group.
    var failsAlone: Bool {
        switch self {
        case .wrongExpectedVersion: true
        case .notAStore, .unsupportedFormat, .alreadyOpen, .corruptRecord, .invalidStreamName,
             .reservedDatabaseName, .undecodableEvent, .corruptView, .readOnlyViews, .invalidArgument,
             .rebuildInProgress, .formatNeedsMigration, .viewsNeedUpgrade, .backupUnusable: false
        }
    }
}

/// Group commit: concurrent writers of one process share write transactions.
///
/// Each writer submits its work and waits. Whoever finds no commit in progress becomes the
/// leader: it takes every pending request (its own included), runs them one after another in ONE
/// LMDB write transaction, commits once (one fsync), and hands each writer its own result, typed
/// as its work returned it. While it commits, new requests queue up for the next leader. Without
/// contention a request is committed alone, at once; with 16 writers, one fsync acknowledges many
/// of them.
///
/// A request that fails with an error marked ``FailsAlone`` (a ``ReadingEvents/ValidationError``
/// or a version conflict), which is thrown before it writes anything, fails alone; any other error
/// aborts the shared transaction and is handed to every request of the group (each may retry:
/// commands are idempotent by their command ID).
///
/// `@unchecked Sendable`: `queue` and `leaderActive` are only touched while holding `condition`;
/// a request's `outcome` is written by the leader before it broadcasts and read by its owner after
/// waking under the same lock.
final class GroupCommit: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [any PendingRequest] = []
    private var leaderActive = false
    private let environment: LMDBEnvironment

    /// Requests committed so far and transactions used (read through ``counts``).
    private var requestsCommitted = 0
    private var transactionsCommitted = 0

    init(environment: LMDBEnvironment) {
        self.environment = environment
    }

    /// Runs `work` inside a shared write transaction and returns its result once committed.
    func submit<Value>(_ work: @escaping (WriteTransaction) throws -> Value) throws -> Value {
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
    private func run(_ batch: [any PendingRequest]) {
        var failure: (any Error)?
        do {
            // The closure re-runs after the map grows: each run replaces every request's result.
            try environment.write { txn in
                for request in batch { try request.perform(in: txn) }
            }
        } catch {
            failure = error
        }
        condition.lock()
        for request in batch { request.settle(failure: failure) }
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

/// A submitted request as the leader sees it, whatever its result type.
private protocol PendingRequest: AnyObject {
    /// Runs the work in the group's transaction and keeps its result, or its error when the error
    /// fails alone; any other error is rethrown and aborts the transaction.
    func perform(in txn: WriteTransaction) throws
    /// Sets the outcome: the kept result when the transaction committed (`failure` nil), else
    /// `failure`.
    func settle(failure: (any Error)?)
}

/// One writer's work and, once its group is settled, its typed outcome.
private final class Request<Value>: PendingRequest {
    private let work: (WriteTransaction) throws -> Value
    /// The result of the latest run of the work (the transaction's closure may run again).
    private var result: Result<Value, any Error>?
    /// Set by the leader under the group commit's lock; read by the owner under the same lock.
    private(set) var outcome: Result<Value, any Error>?

    init(work: @escaping (WriteTransaction) throws -> Value) { self.work = work }

    func perform(in txn: WriteTransaction) throws {
        do {
            result = .success(try work(txn))
        } catch let error as any FailsAlone where error.failsAlone {
            result = .failure(error)
        }
    }

    func settle(failure: (any Error)?) {
        if let failure {
            outcome = .failure(failure)
        } else if let result {
            outcome = result
        }
    }
}
