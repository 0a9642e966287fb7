import DemoHistory
import EventStoreLMDB
import Foundation
import ReadingEvents
import ReadingSync
import Testing

/// The seeds of the randomized convergence test: 3 in CI; `SYNC_SOAK_SEEDS=N` runs N seeds
/// (`Server/Scripts/soak.sh`).
let convergenceSeeds: [UInt64] = {
    let count = ProcessInfo.processInfo.environment["SYNC_SOAK_SEEDS"].flatMap(Int.init) ?? 3
    return (0..<UInt64(max(count, 1))).map { 1_000 + $0 }
}()

@Suite("Randomized convergence through the real server: imports on several devices, a restored backup, refused records, a partner",
       needsPostgres)
struct RandomConvergenceTests {
    /// One device: its store and client.
    struct Device {
        let name: String
        let store: ReadingStore
        let client: SyncClient
        var books: [(book: BookID, pages: Int, position: Int)] = []
    }

    @Test(arguments: convergenceSeeds)
    func everyDeviceEndsWithTheUnionAndNothingAcknowledgedIsMissing(seed: UInt64) async throws {
        let fixture = try Fixture()
        let server = try #require(URL(string: fixture.baseURL))
        let root = try makeTemporaryDirectory("soak")
        defer { try? FileManager.default.removeItem(at: root) }
        var generator = SeededGenerator(seed: seed)
        let histories = demoHistories(readers: 2, days: 25, seed: seed, stamped: false)
        let (alice, bob) = (ReaderID(histories[0].reader), ReaderID(histories[1].reader))
        var created: Set<EventID> = []   // every event of Alice's made on a device

        func open(_ name: String, _ reader: ReaderID, token: String?) async throws -> Device {
            let store = try ReadingStore.open(at: root.appendingPathComponent(name))
            let registration = try await SyncClient.register(server: server, reader: reader, deviceName: name, token: token)
            let client = try SyncClient(store: store, server: server, token: registration.token,
                                        pushBatch: Int.random(in: 5...60, using: &generator), pullPage: Int.random(in: 5...60, using: &generator))
            return Device(name: name, store: store, client: client)
        }
        var devices = [try await open("phone", alice, token: nil)]
        let aliceToken = devices[0].client.token
        devices.append(try await open("tablet", alice, token: aliceToken))
        devices.append(try await open("laptop", alice, token: aliceToken))
        devices.append(try await open("bob", bob, token: nil))
        #expect(try await devices[3].client.accept(code: try await devices[0].client.invite().code) == alice)

        // The same export imported on the phone and the tablet, the first half of it on the laptop.
        for (index, rows) in [histories[0].events, histories[0].events, Array(histories[0].events.prefix(histories[0].events.count / 2))].enumerated() {
            #expect(try devices[index].store.importHistory(rows).rejected.isEmpty)
        }
        created.formUnion(histories[0].events.map(\.eventID))
        try devices[3].store.importHistory(histories[1].events)

        var clock = histories.flatMap { $0.events.map(\.occurredAt.microseconds) }.max()!
        func record(on index: Int) throws {
            clock += 60_000_000
            let at = Timestamp(microseconds: clock)
            let device = devices[index]
            let context = CommandContext(reader: device.name == "bob" ? bob : alice, occurredAt: at, timeZone: "Asia/Seoul", recordedAt: at)
            var made: [EventEnvelope]
            if let pick = device.books.indices.randomElement(using: &generator), device.books[pick].position < device.books[pick].pages,
               Bool.random(using: &generator) {
                let next = min(device.books[pick].pages, device.books[pick].position + Int.random(in: 1...40, using: &generator))
                made = try device.store.execute(.recordPages(position: next), book: device.books[pick].book, context: context)
                devices[index].books[pick].position = next
            } else {
                let book = BookID(), pages = Int.random(in: 50...400, using: &generator)
                made = try device.store.execute(.addBook(BookMetadata(title: "Book \(clock)", pageCount: pages), status: .reading),
                                                book: book, context: context)
                devices[index].books.append((book, pages, 0))
            }
            if device.name != "bob" { created.formUnion(made.map(\.eventID)) }
        }

        var restored = false, injected = false
        for _ in 0..<30 {
            switch Int.random(in: 0..<10, using: &generator) {
            case 0..<5:
                try await devices.randomElement(using: &generator)!.client.sync()
            case 5..<8:
                try record(on: Int.random(in: 0..<devices.count, using: &generator))
            case 8 where !restored:
                // A restored backup of the phone: it continues under a new replica ID, and both write.
                restored = true
                let copy = root.appendingPathComponent("restored")
                try devices[0].store.backup(to: copy)
                devices.append(try await open("restored", alice, token: aliceToken))
                #expect(devices.last!.store.replica != devices[0].store.replica)
            case _ where !injected:
                // Records the server refuses, pushed raw by one of Alice's devices: nothing is stored.
                injected = true
                try await devices[0].client.sync()
                let raw = TestDevice(baseURL: fixture.baseURL, token: aliceToken, reader: alice.uuid)
                let held = try #require(try devices[0].store.changes(since: VersionVector(), limit: 1).first)
                var noOrigin = held
                noOrigin.eventID = EventID(seededUUID(&generator))
                noOrigin.origin = nil
                var taken = held
                taken.eventID = EventID(seededUUID(&generator))
                let before = try fixture.storedEventCount()
                #expect(try await raw.push([noOrigin]).status == 400)
                #expect(try await raw.push([taken]).status == 409)
                #expect(try fixture.storedEventCount() == before)
            default:
                try await devices.randomElement(using: &generator)!.client.sync()
            }
        }
        // Quiet: every device syncs until a round moves nothing.
        for round in 0..<4 {
            var moved = 0
            for device in devices {
                let report = try await device.client.sync()
                #expect(report.refused.isEmpty, "\(device.name): \(report)")
                moved += report.pushed + report.pulled.appended
            }
            if moved == 0 && round > 0 { break }
        }

        // The reference: a store holding the union of Alice's devices' copies and what Bob shares.
        let reference = try ReadingStore.open(at: root.appendingPathComponent("reference"))
        let aliceDevices = devices.filter { $0.name != "bob" }
        for device in aliceDevices { try reference.merge(try device.store.changes(since: VersionVector(), limit: 1_000_000)) }
        let bobs = try devices[3].store.changes(since: VersionVector(), limit: 1_000_000)
        try reference.merge(bobs.filter { $0.reader == bob && !privateByDefault.contains($0.type.tag) })
        let aside = try reference.quarantine()
        #expect(aside.isEmpty, "\(aside.prefix(3))")
        let union = try Set(reference.events().map(\.eventID))
        #expect(union.isSuperset(of: created), "every acknowledged event of Alice's is in the union")
        for device in aliceDevices {
            #expect(try Set(device.store.events().map(\.eventID)) == union, "\(device.name) holds the union")
            #expect(try device.store.viewDigest() == reference.viewDigest(), "\(device.name) shows the union's views")
            #expect(try device.store.versionVector() == reference.versionVector(), "\(device.name)'s vector")
            let held = try device.store.quarantine()
            #expect(held.isEmpty, "\(device.name): \(held.count) quarantined, first \(held.prefix(1))")
        }
        let aliceShared = try Set(reference.events().filter { $0.reader == alice && !privateByDefault.contains($0.type.tag) }.map(\.eventID))
        #expect(Set(bobs.filter { $0.reader == alice }.map(\.eventID)) == aliceShared, "Bob holds exactly what Alice shares")
    }
}
