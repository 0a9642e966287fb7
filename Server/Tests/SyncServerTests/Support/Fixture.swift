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

    init(arguments: [String] = [], environment: [String: String] = [:]) throws {
        cluster = try PostgresCluster.shared.get()
        database = try cluster.createDatabase()
        server = try ServerProcess.start(databaseURL: cluster.url(database: database), arguments: arguments, environment: environment)
    }

    var baseURL: String { server.baseURL }

    /// Rows in `events` of the whole database (every reader).
    func storedEventCount() throws -> Int { try countStoredEvents(in: cluster, database: database) }

    deinit { server.stop() }
}

/// Rows in `events` of `database` (every reader); throws, showing psql's output, when that is not
/// a number.
func countStoredEvents(in cluster: PostgresCluster, database: String) throws -> Int {
    let output = try cluster.psql("SELECT count(*) FROM events", database: database)
    guard let count = Int(output) else {
        throw CommandError(command: ["psql", "-c", "SELECT count(*) FROM events"], status: 0, output: "not a count: \(output)")
    }
    return count
}

/// A seeded demo history of `readers` readers, each reader's events in recorded order; `stamped`:
/// each event carries the origin one replica of its reader gave it (see ``stamped(_:seed:)``), as
/// the server requires of a pushed record; without, for a store to stamp them.
func demoHistories(readers: Int, days: Int, seed: UInt64, stamped stamp: Bool = true) -> [(reader: UUID, events: [EventEnvelope])] {
    let all = DemoHistory.generate(DemoHistory.Options(readers: readers, days: days, seed: seed))
    var order: [UUID] = []
    var byReader: [UUID: [EventEnvelope]] = [:]
    for envelope in all {
        if byReader[envelope.reader.uuid] == nil { order.append(envelope.reader.uuid) }
        byReader[envelope.reader.uuid, default: []].append(envelope)
    }
    return order.map { ($0, stamp ? stamped(byReader[$0]!, seed: seed) : byReader[$0]!) }
}

/// `events` (of one reader) as one replica made them: a replica ID seeded by `seed` and the
/// reader, sequences 1, 2, 3, ... in the given order, increasing stamps from the replica's hybrid
/// clock (the later of the event's `recordedAt` and the last stamp + 1 ms; `recordedAt` raised
/// to a day before the stamp when the clock ran further ahead, as a store does), so every stamp
/// keeps `EventOrigin.checkStamp(recordedAt:)`.
func stamped(_ events: [EventEnvelope], seed: UInt64) -> [EventEnvelope] {
    guard let reader = events.first?.reader.uuid else { return events }
    let readerBits = withUnsafeBytes(of: reader.uuid) { $0.load(as: UInt64.self) }
    var generator = SeededGenerator(seed: seed ^ readerBits)
    let replica = ReplicaID(seededUUID(&generator))
    var clock: UInt64 = 0
    return events.enumerated().map { index, envelope in
        var copy = envelope
        let next = EventOrigin.nextStamp(after: clock + 999, recordedAt: envelope.recordedAt)!
        clock = next.stamp
        copy.recordedAt = next.recordedAt
        copy.origin = EventOrigin(stamp: clock, replica: replica, sequence: UInt64(index + 1))
        return copy
    }
}

/// A version-4 UUID from a seeded generator.
func seededUUID(_ generator: inout SeededGenerator) -> UUID {
    let a = generator.next(), b = generator.next()
    let bytes = withUnsafeBytes(of: (a, b)) { Array($0) }
    return UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], 0x40 | (bytes[6] & 0x0f), bytes[7],
                       0x80 | (bytes[8] & 0x3f), bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
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

/// `count` events of `reader`, made from a demo history's events (their payloads, instants and
/// zones) with seeded event IDs and origins (``stamped(_:seed:)``): as many as a test needs, all valid.
func syntheticHistory(reader: UUID, count: Int, seed: UInt64) -> [EventEnvelope] {
    let templates = DemoHistory.generate(DemoHistory.Options(readers: 2, days: 90, seed: seed))
    var generator = SeededGenerator(seed: seed)
    return stamped((0..<count).map { index in
        let template = templates[index % templates.count]
        return EventEnvelope(eventID: EventID(seededUUID(&generator)), reader: ReaderID(reader), occurredAt: template.occurredAt,
                             timeZone: template.timeZone, recordedAt: template.recordedAt, event: template.event)
    }, seed: seed)
}
