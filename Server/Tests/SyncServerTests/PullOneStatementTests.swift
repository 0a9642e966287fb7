import Foundation
import Logging
import PostgresNIO
import ReadingEvents
@testable import SyncServerCore
import SyncWire
import Testing

/// Issue 38: a pull whose partners and groups are those its cursor was computed with is one
/// statement (one round trip instead of four: BEGIN, the partners, the page, COMMIT). Its page is
/// exactly the transaction's, and it gives way to the transaction whenever the partners or their
/// groups changed.
@Suite("A pull in one statement answers what the pull's transaction answers", needsPostgres)
struct PullOneStatementTests {
    /// Bob pulls his own events and his partner Alice's in pages of 37. At every cursor the
    /// one-statement pull answers nil (a cursor that does not know Alice yet, or Alice's groups
    /// changed since) or exactly the page and the next cursor of the transaction; after Alice
    /// turns memos on, the next pull gives way to the transaction (which restarts Alice for her
    /// memos), and then the one-statement pull answers again, equal to it.
    @Test func everyPageEqualsTheTransactionsAndChangesFallBack() async throws {
        let fixture = try Fixture()
        let histories = demoHistories(readers: 2, days: 60, seed: 83)
        let alice = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[0].reader)
        let bob = try await TestDevice.registerFirst(fixture.baseURL, reader: histories[1].reader)
        let code = try #require(try await alice.send(.POST, "/v1/invites", json: [String: Any]()).json["code"] as? String)
        #expect(try await bob.send(.POST, "/v1/invites/accept", json: ["code": code]).status == 200)
        #expect(try await alice.push(histories[0].events).status == 200)
        #expect(try await bob.push(histories[1].events).status == 200)

        let client = PostgresClient(configuration: try postgresConfiguration(url: fixture.cluster.url(database: fixture.database)),
                                    backgroundLogger: Logger(label: "pull-one-statement-test"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            // Generous timeouts: the test's own pool opens its connections while other tests load the machine.
            let store = PostgresSyncStore(client: client, logger: Logger(label: "pull-one-statement-test"),
                                          acquireTimeout: .seconds(60), statementTimeout: .seconds(120))

            /// Walks every page from `start`; returns the pages answered in one statement, the
            /// fallbacks, the events and the last cursor.
            func walk(from start: PullCursor) async throws -> (fast: Int, fallbacks: Int, events: Int, cursor: PullCursor) {
                var cursor = start
                var (fast, fallbacks, events) = (0, 0, 0)
                while true {
                    let slow = try await store.pullInTransaction(reader: bob.reader, after: cursor, limit: 37)
                    if let one = try await store.pullInOneStatement(reader: bob.reader, after: cursor, limit: 37) {
                        #expect(one == slow, "at cursor \(cursor.encoded)")
                        fast += 1
                    } else {
                        fallbacks += 1
                    }
                    events += slow.events.count
                    cursor = try #require(PullCursor(encoded: slow.next))
                    if !slow.more { return (fast, fallbacks, events, cursor) }
                }
            }

            let first = try await walk(from: PullCursor())
            let shared = histories[0].events.filter { !privateByDefault.contains($0.type.tag) }.count
            #expect(first.events == histories[1].events.count + shared)
            // Only the empty cursor does not know Alice: every other page is one statement.
            #expect(first.fallbacks == 1, "\(first)")
            #expect(first.fast >= 5, "\(first)")

            // Alice shares memos now: the first pull after that is the transaction's.
            var settings = try await alice.send(.GET, "/v1/share-settings").json
            settings["memos"] = true
            #expect(try await alice.send(.PUT, "/v1/share-settings", json: settings).status == 200)
            #expect(try await store.pullInOneStatement(reader: bob.reader, after: first.cursor, limit: 37) == nil)
            let second = try await walk(from: first.cursor)
            let memos = histories[0].events.filter { memoTags.contains($0.type.tag) }.count
            #expect(memos > 0)
            #expect(second.events == memos, "Alice's memos arrive once, nothing else again: \(second)")
            #expect(second.fallbacks == 1, "\(second)")

            // Alice and Bob part: the cursor's partner is gone, the transaction answers.
            #expect(try await bob.send(.DELETE, "/v1/partners/\(alice.reader.uuidString)").status == 204)
            #expect(try await store.pullInOneStatement(reader: bob.reader, after: second.cursor, limit: 37) == nil)
            let own = try await store.pull(reader: bob.reader, after: second.cursor, limit: 37)
            #expect(own.events.isEmpty)
            let alone = try #require(PullCursor(encoded: own.next))
            #expect(Set(alone.positions.keys).isSubset(of: [bob.reader]))
            // Bob alone: one statement again.
            #expect(try await store.pullInOneStatement(reader: bob.reader, after: alone, limit: 37) != nil)
        }
    }
}
