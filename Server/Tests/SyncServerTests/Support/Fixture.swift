import DemoHistory
import Foundation
import ReadingEvents
import Testing

/// One test's world: a fresh database in the shared cluster and a server process on it.
///
/// `@unchecked Sendable`: constants set in `init`.
final class Fixture: @unchecked Sendable {
    let cluster: PostgresCluster
    let database: String
    let server: ServerProcess

    init(arguments: [String] = []) throws {
        cluster = try PostgresCluster.shared.get()
        database = try cluster.createDatabase()
        server = try ServerProcess.start(databaseURL: cluster.url(database: database), arguments: arguments)
    }

    var baseURL: String { server.baseURL }

    /// Rows in `events` of the whole database (every reader).
    func storedEventCount() throws -> Int { Int(try cluster.psql("SELECT count(*) FROM events", database: database)) ?? -1 }

    deinit { server.stop() }
}

/// A seeded demo history of `readers` readers, each reader's events in recorded order.
func demoHistories(readers: Int, days: Int, seed: UInt64) -> [(reader: UUID, events: [EventEnvelope])] {
    let all = DemoHistory.generate(DemoHistory.Options(readers: readers, days: days, seed: seed))
    var order: [UUID] = []
    var byReader: [UUID: [EventEnvelope]] = [:]
    for envelope in all {
        if byReader[envelope.reader.uuid] == nil { order.append(envelope.reader.uuid) }
        byReader[envelope.reader.uuid, default: []].append(envelope)
    }
    return order.map { ($0, byReader[$0]!) }
}

/// The tags a partner sees with the default share settings: everything but memos, goals,
/// challenges and the home order (written out here, independent of the server's own table).
let privateByDefault: Set<String> = ["MemoWritten", "MemoEdited", "MemoRemoved", "GoalSet", "GoalChanged",
                                     "GoalDeleted", "ChallengeSet", "HomeOrderSet"]
let memoTags: Set<String> = ["MemoWritten", "MemoEdited", "MemoRemoved"]

/// The suite trait: skip, saying why, when PostgreSQL is not installed.
let needsPostgres = Testing.ConditionTrait.enabled(
    if: PostgresCluster.available,
    "PostgreSQL binaries not found (/usr/lib/postgresql/*/bin/initdb or $PG_BIN): apt-get install postgresql")
