import DemoHistory
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

@Suite("Two readers, three devices, real stores, the ReadingSync client", needsPostgres)
struct ConvergenceTests {
    /// Alice's history split by stream between her two devices (each stream wholly on one device,
    /// as when each device is where a book is read), Bob's on his one device.
    @Test(arguments: [UInt64(41), 42, 43])
    func devicesConvergeAndPartnersSeeExactlyWhatIsShared(seed: UInt64) async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("stores")
        defer { try? FileManager.default.removeItem(at: root) }
        let histories = demoHistories(readers: 2, days: 45, seed: seed, stamped: false)
        let (alice, bob) = (ReaderID(histories[0].reader), ReaderID(histories[1].reader))
        let phoneA = try ReadingStore.open(at: root.appendingPathComponent("phoneA"))
        let tabletA = try ReadingStore.open(at: root.appendingPathComponent("tabletA"))
        let phoneB = try ReadingStore.open(at: root.appendingPathComponent("phoneB"))

        // Offline edits on all three devices.
        let streams = Array(Set(histories[0].events.map(\.stream.description))).sorted()
        let onTablet = Set(streams.enumerated().filter { $0.offset % 2 == 1 }.map(\.element))
        try phoneA.appendRecorded(histories[0].events.filter { !onTablet.contains($0.stream.description) })
        try tabletA.appendRecorded(histories[0].events.filter { onTablet.contains($0.stream.description) })
        try phoneB.appendRecorded(histories[1].events)

        // Register: the phone claims Alice, the tablet joins with the phone's token.
        let regA = try await SyncClient.register(server: server, reader: alice, deviceName: "phone")
        let regA2 = try await SyncClient.register(server: server, reader: alice, deviceName: "tablet", token: regA.token)
        let regB = try await SyncClient.register(server: server, reader: bob, deviceName: "phone")
        let clients = [
            (try SyncClient(store: phoneA, server: server, token: regA.token), phoneA),
            (try SyncClient(store: tabletA, server: server, token: regA2.token), tabletA),
            (try SyncClient(store: phoneB, server: server, token: regB.token), phoneB),
        ]

        // Pair: Alice invites, Bob accepts.
        let invite = try await clients[0].0.invite()
        #expect(try await clients[2].0.accept(code: invite.code) == alice)

        // Syncs in a seeded random order, some devices several times; then two full rounds.
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<5 {
            let (client, _) = clients[Int.random(in: 0..<3, using: &generator)]
            try await client.sync()
        }
        for _ in 0..<2 { for (client, _) in clients { try await client.sync() } }

        // Alice's devices hold the same events and show the same views.
        #expect(try phoneA.viewDigest() == tabletA.viewDigest())
        let allA = try Set(phoneA.changes(since: VersionVector()).map(\.eventID))
        #expect(allA == Set(histories[0].events.map(\.eventID)).union(shared(histories[1].events)))
        // Bob holds his own events and exactly what Alice shares (defaults: no memos, no goals).
        let bobHolds = try phoneB.changes(since: VersionVector())
        #expect(Set(bobHolds.filter { $0.reader == alice }.map(\.eventID)) == shared(histories[0].events))
        #expect(!bobHolds.contains { $0.reader == alice && memoTags.contains($0.type.tag) })
        #expect(Set(bobHolds.filter { $0.reader == bob }.map(\.eventID)) == Set(histories[1].events.map(\.eventID)))

        // A second sync moves nothing.
        for (client, _) in clients {
            let report = try await client.sync()
            #expect(report.pulled.appended == 0)
            #expect(report.pushed == 0)
        }

        // Unpair; Alice reads on (a new book read-through's events from her tablet's own history
        // would do, but new facts are simplest: a later demo history of her reader).
        try await clients[2].0.endPartnership(with: alice)
        let later = DemoHistory.generate(DemoHistory.Options(readers: 1, days: 10, seed: seed + 100,
                                                             firstDay: LocalDate(dayNumber: 20_089 + 400)))
        let moved = later.map { template in
            EventEnvelope(eventID: EventID(), reader: alice, occurredAt: template.occurredAt, timeZone: template.timeZone,
                          recordedAt: template.recordedAt, event: template.event)
        }
        try tabletA.appendRecorded(moved)
        try await clients[1].0.sync()
        let before = try phoneB.changes(since: VersionVector()).count
        let report = try await clients[2].0.sync()
        #expect(report.pulled.appended == 0)
        #expect(try phoneB.changes(since: VersionVector()).count == before)
        // Alice's phone still receives her tablet's new events.
        try await clients[0].0.sync()
        #expect(try phoneA.viewDigest() == tabletA.viewDigest())
    }

    /// The event IDs a partner sees under the default share settings.
    func shared(_ events: [EventEnvelope]) -> Set<EventID> {
        Set(events.filter { !privateByDefault.contains($0.type.tag) }.map(\.eventID))
    }
}
